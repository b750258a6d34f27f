package web

import (
	_ "embed"
	"net/http"

	"github.com/labstack/echo/v4"
)

// openAPIDoc is the OpenAPI 3.1 description of the JSON API, written by
// hand next to the handlers it describes; openapi_test.go holds it to the
// router (every route documented, nothing documented that does not exist)
// and to the handlers' real answers.
//
//go:embed openapi.json
var openAPIDoc []byte

// handleOpenAPI is GET /api/openapi.json. It needs no token: the document
// describes the API, not its data.
func (s *Server) handleOpenAPI(c echo.Context) error {
	c.Response().Header().Set("Cache-Control", "public, max-age=300")
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, openAPIDoc)
}
