package promrun

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// splitByWindow copies OpenMetrics text into one file per window of the
// sample timestamps, repeating each family's metadata lines in every file
// that has samples of that family.
func splitByWindow(r io.Reader, dir string, window time.Duration) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	type out struct {
		f      *os.File
		w      *bufio.Writer
		family int // index of the last family written, for its header
	}
	outs := map[int64]*out{}
	closeAll := func() {
		for _, o := range outs {
			o.f.Close()
		}
	}
	var (
		header  []string // metadata lines of the current family
		family  int
		sc      = bufio.NewScanner(r)
		winSecs = int64(window / time.Second)
	)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line == "# EOF" {
			continue
		}
		if strings.HasPrefix(line, "#") {
			if len(header) > 0 && !sameFamily(header[len(header)-1], line) {
				header = nil
			}
			if len(header) == 0 {
				family++
			}
			header = append(header, line)
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			closeAll()
			return nil, fmt.Errorf("sample without timestamp: %q", line)
		}
		ts, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("bad timestamp in %q: %v", line, err)
		}
		w := int64(ts) / winSecs
		o := outs[w]
		if o == nil {
			f, err := os.Create(filepath.Join(dir, fmt.Sprintf("w%012d.om", w)))
			if err != nil {
				closeAll()
				return nil, err
			}
			o = &out{f: f, w: bufio.NewWriterSize(f, 1<<20)}
			outs[w] = o
		}
		if o.family != family {
			for _, h := range header {
				o.w.WriteString(h)
				o.w.WriteByte('\n')
			}
			o.family = family
		}
		o.w.WriteString(line)
		o.w.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		closeAll()
		return nil, err
	}
	var names []string
	for _, o := range outs {
		o.w.WriteString("# EOF\n")
		err := o.w.Flush()
		if cerr := o.f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, err
		}
		names = append(names, o.f.Name())
	}
	sort.Strings(names)
	return names, nil
}

// sameFamily reports whether two metadata lines ("# TYPE name …") name the
// same metric family.
func sameFamily(a, b string) bool {
	fa, fb := strings.Fields(a), strings.Fields(b)
	return len(fa) > 2 && len(fb) > 2 && fa[2] == fb[2]
}
