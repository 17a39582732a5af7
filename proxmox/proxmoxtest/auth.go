package proxmoxtest

import (
	"crypto/subtle"
	"fmt"
	"net/http"
	"regexp"
	"strings"
)

// token is an API token. privs nil means every privilege.
type token struct {
	id     string
	secret string
	privs  map[string]bool
}

func (t *token) has(privs ...string) bool {
	if t.privs == nil {
		return true
	}
	for _, p := range privs {
		if t.privs[p] {
			return true
		}
	}
	return false
}

var tokenIDRe = regexp.MustCompile(`^[A-Za-z0-9._-]+@[A-Za-z0-9._-]+![A-Za-z][A-Za-z0-9._-]*$`)

// AddToken creates an API token id ("user@realm!name") holding only privs
// (e.g. "VM.Audit", "VM.PowerMgmt") on every path, and returns its secret.
// Requests needing any other privilege get 403 "Permission check failed".
func (s *Server) AddToken(id string, privs ...string) (secret string, err error) {
	if !tokenIDRe.MatchString(id) {
		return "", fmt.Errorf("proxmoxtest: invalid token id %q (want user@realm!name)", id)
	}
	t := &token{id: id, secret: newSecret(), privs: map[string]bool{}}
	for _, p := range privs {
		t.privs[p] = true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.tokens[id]; ok {
		return "", fmt.Errorf("proxmoxtest: token %q already exists", id)
	}
	s.tokens[id] = t
	return t.secret, nil
}

// authenticate checks "Authorization: PVEAPIToken=user@realm!tokenid=secret"
// (PVE::APIServer::Formatter / PVE::AccessControl::verify_token).
func (s *Server) authenticate(r *http.Request) (*token, *apiError) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return nil, &apiError{code: http.StatusUnauthorized, msg: "No ticket"}
	}
	v, ok := strings.CutPrefix(h, "PVEAPIToken=")
	if !ok {
		v, ok = strings.CutPrefix(h, "PVEAPIToken ")
	}
	if !ok {
		return nil, &apiError{code: http.StatusUnauthorized, msg: "No ticket"}
	}
	id, secret, ok := strings.Cut(strings.TrimSpace(v), "=")
	if !ok {
		return nil, &apiError{code: http.StatusUnauthorized, msg: "invalid token value!"}
	}
	s.mu.Lock()
	t := s.tokens[id]
	s.mu.Unlock()
	if t == nil || subtle.ConstantTimeCompare([]byte(t.secret), []byte(secret)) != 1 {
		return nil, &apiError{code: http.StatusUnauthorized, msg: "invalid token value!"}
	}
	return t, nil
}
