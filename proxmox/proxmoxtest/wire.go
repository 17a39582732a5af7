package proxmoxtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

const apiPrefix = "/api2/json"

// apiError is an error the API answers with. The first line of msg becomes
// the HTTP reason phrase, as pve-http-server does (PVE/APIServer/AnyEvent.pm
// sends "HTTP/1.1 $code $msg").
type apiError struct {
	code   int
	msg    string
	params map[string]string // 400 "Parameter verification failed." details
}

func (e *apiError) Error() string { return e.msg }

// errf is a 500 error, the status Proxmox uses for every die() in an API
// handler.
func errf(format string, args ...any) *apiError {
	return &apiError{code: http.StatusInternalServerError, msg: fmt.Sprintf(format, args...)}
}

// paramErr is 400 "Parameter verification failed." as raised by
// PVE::Exception::raise_param_exc.
func paramErr(param, msg string) *apiError {
	return &apiError{code: http.StatusBadRequest, msg: "Parameter verification failed.", params: map[string]string{param: msg}}
}

// request is one API call after routing and parameter parsing.
type request struct {
	r      *http.Request
	route  string
	params map[string]string
	user   string // token id, e.g. root@pam!openctl
	tok    *token
}

func (q *request) path(name string) string { return q.r.PathValue(name) }

func (q *request) get(name string) (string, bool) {
	v, ok := q.params[name]
	return v, ok
}

// handler serves one route; data is wrapped in {"data": ...}.
type handler func(q *request) (data any, err *apiError)

// perm is the privilege check of a route: any of privs on path, where
// {vmid} and {node} are replaced from the request. A nil perm means the
// route is open to any authenticated user.
type perm struct {
	path  string
	privs []string
}

// handle registers route ("METHOD /path/{param}") under /api2/json.
func (s *Server) handle(route string, p *perm, h handler) {
	method, path, _ := strings.Cut(route, " ")
	s.routes = append(s.routes, route)
	sort.Strings(s.routes)
	s.mux.HandleFunc(method+" "+apiPrefix+path, func(w http.ResponseWriter, r *http.Request) {
		s.serve(w, r, route, p, h)
	})
}

func (s *Server) registerNotImplemented() {
	s.mux.HandleFunc(apiPrefix+"/", func(w http.ResponseWriter, r *http.Request) {
		rel := strings.TrimPrefix(r.URL.Path, apiPrefix)
		s.mu.Lock()
		s.counts[r.Method+" <unserved>"]++
		s.mu.Unlock()
		if _, err := s.authenticate(r); err != nil {
			wait(r.Context(), s.scaled(s.cfg.latencies.AuthFailure))
			writeError(w, err)
			return
		}
		// pve-http-server: "Method '$method $path' not implemented" (501).
		writeError(w, &apiError{code: http.StatusNotImplemented, msg: fmt.Sprintf("Method '%s %s' not implemented", r.Method, rel)})
	})
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request, route string, p *perm, h handler) {
	s.mu.Lock()
	s.counts[route]++
	s.mu.Unlock()
	info := RequestInfo{Method: r.Method, Route: route, Path: strings.TrimPrefix(r.URL.Path, apiPrefix), Status: http.StatusOK}
	if hook := s.cfg.hook; hook != nil {
		defer func() { hook(info) }()
	}
	fail := func(w http.ResponseWriter, e *apiError) {
		info.Status, info.Message = e.code, e.msg
		writeError(w, e)
	}

	tok, aerr := s.authenticate(r)
	if aerr != nil {
		wait(r.Context(), s.scaled(s.cfg.latencies.AuthFailure))
		fail(w, aerr)
		return
	}
	params, aerr := parseParams(r)
	if aerr != nil {
		fail(w, aerr)
		return
	}
	info.Params = params
	q := &request{r: r, route: route, params: params, user: tok.id, tok: tok}
	if p != nil {
		path := strings.NewReplacer("{vmid}", q.path("vmid"), "{node}", q.path("node")).Replace(p.path)
		if !tok.has(p.privs...) {
			// PVE::RPCEnvironment::check: "Permission check failed ($path, $privs)".
			fail(w, &apiError{code: http.StatusForbidden, msg: fmt.Sprintf("Permission check failed (%s, %s)", path, strings.Join(p.privs, "|"))})
			return
		}
	}
	// As in PVE::RESTHandler::handle, parameters (path ones included) are
	// verified after the permission check.
	all := make(map[string]string, len(params)+2)
	for k, v := range params {
		all[k] = v
	}
	for _, name := range []string{"node", "vmid", "upid", "iface"} {
		if v := r.PathValue(name); v != "" {
			all[name] = v
		}
	}
	if aerr := validate(route, all); aerr != nil {
		fail(w, aerr)
		return
	}
	if d := s.faults.latency(route); d > 0 {
		wait(r.Context(), d)
	}
	if s.faults.httpError(route) {
		fail(w, &apiError{code: http.StatusInternalServerError, msg: "simulated server error (fault injection)"})
		return
	}
	data, herr := h(q)
	if herr != nil {
		fail(w, herr)
		return
	}
	writeData(w, data)
}

func checkVMID(name, v string) *apiError {
	n, err := strconv.Atoi(v)
	if err != nil {
		return paramErr(name, fmt.Sprintf("type check ('integer') failed - got '%s'", v))
	}
	if n < 100 {
		return paramErr(name, fmt.Sprintf("value must have a minimum value of 100"))
	}
	if n > 999999999 {
		return paramErr(name, fmt.Sprintf("value may have a maximum value of 999999999"))
	}
	return nil
}

// parseParams merges the query string with a JSON or form body, rendering
// every value as Proxmox's API layer sees it: a string.
func parseParams(r *http.Request) (map[string]string, *apiError) {
	params := map[string]string{}
	for k, vs := range r.URL.Query() {
		if len(vs) > 0 {
			params[k] = vs[len(vs)-1]
		}
	}
	if r.Body == nil {
		return params, nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return nil, &apiError{code: http.StatusBadRequest, msg: "unable to read request body"}
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return params, nil
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct == "application/json" {
		var m map[string]any
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		if err := dec.Decode(&m); err != nil {
			return nil, &apiError{code: http.StatusBadRequest, msg: "unable to parse JSON body: " + err.Error()}
		}
		for k, v := range m {
			switch v := v.(type) {
			case nil:
			case string:
				params[k] = v
			case json.Number:
				params[k] = v.String()
			case bool:
				if v {
					params[k] = "1"
				} else {
					params[k] = "0"
				}
			default:
				b, _ := json.Marshal(v)
				params[k] = string(b)
			}
		}
		return params, nil
	}
	vals, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, &apiError{code: http.StatusBadRequest, msg: "unable to parse form body"}
	}
	for k, vs := range vals {
		if len(vs) > 0 {
			params[k] = vs[len(vs)-1]
		}
	}
	return params, nil
}

func writeData(w http.ResponseWriter, data any) {
	body, err := json.Marshal(map[string]any{"data": data})
	if err != nil {
		writeError(w, errf("unable to encode response: %v", err))
		return
	}
	w.Header().Set("Content-Type", "application/json;charset=UTF-8")
	w.Header().Set("Cache-Control", "max-age=0")
	w.Header().Set("Pragma", "no-cache")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// writeError writes the status line itself so the reason phrase carries the
// message (net/http always writes the standard phrase). The JSON body holds
// the message, and the parameter errors of a 400.
func writeError(w http.ResponseWriter, e *apiError) {
	msg := strings.TrimRight(e.msg, "\n")
	env := map[string]any{"data": nil, "message": msg + "\n"}
	if len(e.params) > 0 {
		env["errors"] = e.params
	}
	body, _ := json.Marshal(env)
	reason, _, _ := strings.Cut(msg, "\n")
	reason = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, reason)
	hj, ok := w.(http.Hijacker)
	if !ok {
		w.Header().Set("Content-Type", "application/json;charset=UTF-8")
		w.WriteHeader(e.code)
		_, _ = w.Write(body)
		return
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	fmt.Fprintf(buf, "HTTP/1.1 %d %s\r\n", e.code, reason)
	fmt.Fprintf(buf, "Date: %s\r\n", time.Now().UTC().Format(http.TimeFormat))
	fmt.Fprintf(buf, "Content-Type: application/json;charset=UTF-8\r\n")
	fmt.Fprintf(buf, "Cache-Control: max-age=0\r\nPragma: no-cache\r\nConnection: close\r\n")
	fmt.Fprintf(buf, "Content-Length: %d\r\n\r\n", len(body))
	_, _ = buf.Write(body)
	_ = buf.Flush()
}

// RequestInfo describes one served request, for WithRequestHook.
type RequestInfo struct {
	Method string
	Route  string // "METHOD /path/{param}" as in Server.Routes
	Path   string // the request path below /api2/json
	// Params are the query and body parameters, every value a string; nil
	// when the request was refused before they were parsed.
	Params  map[string]string
	Status  int    // HTTP status answered
	Message string // error message, empty on success
}

// parseBool accepts the boolean spellings of PVE::JSONSchema.
func parseBool(v string) (bool, bool) {
	switch strings.ToLower(v) {
	case "1", "true", "yes", "on":
		return true, true
	case "0", "false", "no", "off":
		return false, true
	}
	return false, false
}
