package serve

import (
	_ "embed"
	"net/http"
)

// pageHTML is the search page: plain HTML and JavaScript, no build step.
//
//go:embed page/index.html
var pageHTML []byte

// handlePage serves the search page at / and a JSON 404 elsewhere.
func (s *Server) handlePage(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" {
		s.writeError(w, apiErr(http.StatusNotFound, CodeNotFound, "no such path %q (see docs/API.md)", r.URL.Path))
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET")
		s.writeError(w, apiErr(http.StatusMethodNotAllowed, CodeMethod, "%s: use GET", r.Method))
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'unsafe-inline'")
	_, _ = w.Write(pageHTML)
}
