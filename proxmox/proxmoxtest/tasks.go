package proxmoxtest

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// task is a simulated worker task. Fields are guarded by Server.mu.
type task struct {
	upid      string
	node      string
	pid       uint32
	pstart    uint32
	starttime int64
	endtime   int64
	typ       string
	id        string
	user      string
	running   bool
	exit      string // "OK" or the error text, once stopped
	lost      bool   // status and log answer "no such task" (fault)
	log       []string
}

// startTask registers a running task and finishes it after delay: run is
// called with s.mu held and its error (or an injected fault) fails the
// task, after which onFail (if set) undoes what the task started. Callers
// hold s.mu.
func (s *Server) startTask(q *request, node, typ, id string, delay time.Duration, run func() error, onFail func()) string {
	s.pid++
	s.pstart += 17
	now := time.Now().Unix()
	t := &task{node: node, pid: s.pid, pstart: s.pstart, starttime: now, typ: typ, id: id, user: q.user, running: true}
	// PVE::Tools::upid_encode: UPID:$node:%08X(pid):%08X(pstart):%08X(starttime):$type:$id:$user:
	t.upid = fmt.Sprintf("UPID:%s:%08X:%08X:%08X:%s:%s:%s:", node, t.pid, t.pstart, uint32(now), typ, id, q.user)
	s.tasks[t.upid] = t
	s.taskList = append(s.taskList, t)
	s.afterFunc(s.scaled(delay), func() {
		var err error
		if s.faults.taskFailure(typ) {
			err = fmt.Errorf("simulated task failure (fault injection)")
		} else {
			err = run()
		}
		t.running = false
		t.endtime = time.Now().Unix()
		t.lost = s.faults.taskStatusLost(typ)
		if err != nil {
			if onFail != nil {
				onFail()
			}
			msg := strings.TrimRight(err.Error(), "\n")
			t.exit = msg
			t.log = append(t.log, "TASK ERROR: "+msg)
			return
		}
		t.exit = "OK"
		t.log = append(t.log, "TASK OK")
	})
	return t.upid
}

// statusClass is the task state PVE's statusfilter matches: ok, error,
// warning or unknown (running tasks).
func (t *task) statusClass() string {
	switch {
	case t.running:
		return "unknown"
	case t.exit == "OK":
		return "ok"
	case strings.HasPrefix(t.exit, "WARNINGS"):
		return "warning"
	}
	return "error"
}

func (t *task) status() map[string]any {
	m := map[string]any{
		"upid": t.upid, "node": t.node, "pid": t.pid, "pstart": t.pstart,
		"starttime": t.starttime, "type": t.typ, "id": t.id, "user": t.user,
	}
	if t.running {
		m["status"] = "running"
	} else {
		m["status"] = "stopped"
		m["exitstatus"] = t.exit
	}
	return m
}

func (s *Server) registerTaskRoutes() {
	// A user may always see their own tasks; others need Sys.Audit
	// (PVE/API2/Tasks.pm). Restricted tokens here only see their own.
	s.handle("GET /nodes/{node}/tasks", nil, s.taskList_)
	s.handle("GET /nodes/{node}/tasks/{upid}/status", nil, func(q *request) (any, *apiError) {
		s.mu.Lock()
		defer s.mu.Unlock()
		t, err := s.lookupTask(q)
		if err != nil {
			return nil, err
		}
		return t.status(), nil
	})
	s.handle("GET /nodes/{node}/tasks/{upid}/log", nil, func(q *request) (any, *apiError) {
		start, limit := 0, 50
		if v, ok := q.get("start"); ok {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return nil, paramErr("start", fmt.Sprintf("type check ('integer') failed - got '%s'", v))
			}
			start = n
		}
		if v, ok := q.get("limit"); ok {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return nil, paramErr("limit", fmt.Sprintf("type check ('integer') failed - got '%s'", v))
			}
			limit = n
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		t, err := s.lookupTask(q)
		if err != nil {
			return nil, err
		}
		lines := []map[string]any{}
		for i, l := range t.log {
			if i < start || len(lines) >= limit {
				continue
			}
			lines = append(lines, map[string]any{"n": i + 1, "t": l})
		}
		return lines, nil
	})
}

func (s *Server) lookupTask(q *request) (*task, *apiError) {
	upid := q.path("upid")
	t := s.tasks[upid]
	if t == nil || t.node != q.path("node") || t.lost {
		if !strings.HasPrefix(upid, "UPID:") {
			return nil, paramErr("upid", "unable to parse worker upid '"+upid+"'")
		}
		return nil, errf("no such task")
	}
	if t.user != q.user && !q.tok.has("Sys.Audit") {
		return nil, &apiError{code: http.StatusForbidden, msg: fmt.Sprintf("Permission check failed (/nodes/%s, Sys.Audit)", t.node)}
	}
	return t, nil
}

func (s *Server) taskList_(q *request) (any, *apiError) {
	node := q.path("node")
	s.mu.Lock()
	defer s.mu.Unlock()
	if aerr := s.checkNode(node); aerr != nil {
		return nil, aerr
	}
	limit, start := 50, 0
	if v, ok := q.get("limit"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return nil, paramErr("limit", fmt.Sprintf("type check ('integer') failed - got '%s'", v))
		}
		limit = n
	}
	if v, ok := q.get("start"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return nil, paramErr("start", fmt.Sprintf("type check ('integer') failed - got '%s'", v))
		}
		start = n
	}
	vmid, _ := q.get("vmid")
	typ, _ := q.get("typefilter")
	source, _ := q.get("source")
	onlyErrors := false
	if v, ok := q.get("errors"); ok {
		onlyErrors, _ = parseBool(v)
	}
	userFilter, _ := q.get("userfilter")
	statusFilter := map[string]bool{}
	if v, ok := q.get("statusfilter"); ok {
		for _, st := range splitList(v) {
			statusFilter[strings.ToLower(st)] = true
		}
	}
	var since, until int64
	if v, ok := q.get("since"); ok {
		since, _ = strconv.ParseInt(v, 10, 64)
	}
	if v, ok := q.get("until"); ok {
		until, _ = strconv.ParseInt(v, 10, 64)
	}
	out := []map[string]any{}
	skipped := 0
	// Newest first, as PVE lists them.
	for i := len(s.taskList) - 1; i >= 0; i-- {
		t := s.taskList[i]
		switch {
		case t.node != node,
			vmid != "" && t.id != vmid,
			typ != "" && t.typ != typ,
			source == "active" && !t.running,
			(source == "" || source == "archive") && t.running,
			onlyErrors && (t.running || t.exit == "OK"),
			since > 0 && t.starttime < since,
			until > 0 && t.starttime > until,
			userFilter != "" && !strings.Contains(t.user, userFilter),
			len(statusFilter) > 0 && !statusFilter[t.statusClass()],
			t.user != q.user && !q.tok.has("Sys.Audit"):
			continue
		}
		if skipped < start {
			skipped++
			continue
		}
		if len(out) >= limit {
			break
		}
		m := t.status()
		if !t.running {
			// In the list, "status" is the exit status of a finished task.
			m["status"] = t.exit
			m["endtime"] = t.endtime
			delete(m, "exitstatus")
		}
		out = append(out, m)
	}
	return out, nil
}
