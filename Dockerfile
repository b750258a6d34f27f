# Waterline: one static binary on a minimal image.
FROM golang:1.26.8-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/waterline ./cmd/waterline

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/waterline /usr/local/bin/waterline
EXPOSE 8080
ENV WATERLINE_ADDR=0.0.0.0:8080
USER nonroot
ENTRYPOINT ["/usr/local/bin/waterline"]
CMD ["serve"]
