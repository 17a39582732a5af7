package node

import (
	"net/http"

	"github.com/openctl/openctl/errcode"
)

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/info", s.handleInfo)
	mux.HandleFunc("/v1/logs/k3s", s.handleLogs)
	mux.HandleFunc("/v1/service/k3s/{action}", s.handleService)
	mux.HandleFunc("/v1/upgrade/k3s", s.handleUpgrade)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, http.StatusNotFound, errcode.NotFound, "no such endpoint: "+r.URL.Path)
	})
	return mux
}

// allow answers 405 unless r uses method m.
func allow(w http.ResponseWriter, r *http.Request, m string) bool {
	if r.Method == m {
		return true
	}
	w.Header().Set("Allow", m)
	writeError(w, r, http.StatusMethodNotAllowed, errcode.Invalid, "method "+r.Method+" not allowed, use "+m)
	return false
}
