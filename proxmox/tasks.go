package proxmox

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	pve "github.com/luthermonson/go-proxmox"
	"github.com/openctl/openctl/backoff"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/registry"
)

// taskLogTail is how many lines of a failed task's log its error carries.
const taskLogTail = 8

// TaskError is a Proxmox worker task that failed, timed out or whose status
// could not be read. Its code follows the exit status: lock timeouts are
// TRANSIENT, everything else is not retried.
type TaskError struct {
	UPID string // the task's id
	Node string // the node that ran it
	Type string // qmclone, qmconfig, qmstart, ...
	// ExitStatus is Proxmox's exit status ("OK" never appears here);
	// empty when the task timed out.
	ExitStatus string
	// Log holds the last lines of the task log (up to 8).
	Log []string
	// Timeout is set when the task did not finish in time.
	Timeout time.Duration
	code    errcode.Code
	err     error
}

// Error describes the task, its exit status and the tail of its log.
func (e *TaskError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "task %s on %s", e.Type, e.Node)
	if e.Timeout > 0 {
		fmt.Fprintf(&b, " did not finish within %s (still running: %s)", e.Timeout, e.UPID)
	} else {
		fmt.Fprintf(&b, " failed: %s", e.ExitStatus)
	}
	if len(e.Log) > 0 {
		fmt.Fprintf(&b, "; task log: %s", strings.Join(e.Log, " | "))
	}
	return b.String()
}

// Is matches the task's error code.
func (e *TaskError) Is(target error) bool { c, ok := target.(errcode.Code); return ok && c == e.code }

// Unwrap returns the task's error code and the go-proxmox error (a
// *proxmox.TaskFailedError for a failed task), so that errcode.Of (and
// with it the engine's retry) finds the former and errors.As the latter.
func (e *TaskError) Unwrap() []error {
	if e.err == nil {
		return []error{e.code}
	}
	return []error{e.code, e.err}
}

// await waits for the task upid to finish, polling with a growing interval,
// and returns nil only if it finished with exit status OK (or WARNINGS).
// Errors reading the status (a 5xx, a lost status file) are retried until
// timeout; a failed task's error carries its log tail.
func (p *Provider) await(ctx context.Context, c *conn, upid pve.UPID, timeout time.Duration) error {
	task := pve.NewTask(upid, c.client)
	if task == nil {
		return errcode.New(errcode.Internal, "proxmox: the API returned no task id")
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	b := pollPolicy(p.tune.PollMin, p.tune.PollMax).Start()
	var lastErr error
	began := time.Now()
	// Sleep most of the time this task type usually takes before the first
	// poll: fewer status requests, and no later an answer.
	_ = backoff.Sleep(wctx, p.expected(task.Type)) // wctx's end is handled below
	for {
		interval := b.Next()
		// Wait with an hour-long interval and a max of one interval: one
		// status poll (with go-proxmox's "no such task" fallback), then a
		// quiet interval, then ErrTimeout if still running.
		err := task.Wait(wctx, time.Hour, interval)
		switch {
		case err == nil:
			p.learn(task.Type, time.Since(began))
			return nil
		case errors.Is(err, pve.ErrTimeout):
			// Still running.
		case ctx.Err() != nil:
			return ctx.Err()
		case wctx.Err() != nil:
			te := &TaskError{UPID: string(upid), Node: task.Node, Type: task.Type, Timeout: timeout, code: errcode.Transient, err: lastErr}
			return te
		default:
			if tf, ok := errors.AsType[*pve.TaskFailedError](err); ok {
				return p.taskFailed(ctx, task, tf)
			}
			if cerr := classify(err); !isTransient(cerr) {
				return fmt.Errorf("reading status of task %s: %w", upid, cerr)
			}
			// Polling a task this provider started is retried here, until
			// the task's timeout: re-running the call would start it again.
			lastErr = err
			_ = backoff.Sleep(wctx, interval) // wctx's end is handled above
		}
	}
}

// taskFailed builds the TaskError of a failed task, fetching its log tail.
func (p *Provider) taskFailed(ctx context.Context, task *pve.Task, tf *pve.TaskFailedError) error {
	te := &TaskError{UPID: string(tf.UPID), Node: tf.Node, Type: tf.Type, ExitStatus: tf.ExitStatus, err: tf, code: errcode.Internal}
	if transientRe.MatchString(tf.ExitStatus) {
		te.code = errcode.Transient
	}
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if log, err := task.Log(lctx, 0, 1000); err == nil {
		keys := make([]int, 0, len(log))
		for k := range log {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if len(keys) > taskLogTail {
			keys = keys[len(keys)-taskLogTail:]
		}
		for _, k := range keys {
			te.Log = append(te.Log, log[k])
		}
	}
	return te
}

// expected is how long to wait before first asking about an operation of
// kind: 80% of the moving average of its recent durations, capped at
// PollMax (zero until one has been seen).
func (p *Provider) expected(kind string) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return min(p.expect[kind]*4/5, p.tune.PollMax)
}

// learn folds one observed duration of kind into its moving average.
func (p *Provider) learn(kind string, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if old, ok := p.expect[kind]; ok {
		d = (old*7 + d*3) / 10
	}
	p.expect[kind] = d
}

// vmTask is one entry of a node's task list (GET /nodes/{node}/tasks).
type vmTask struct {
	UPID string `json:"upid"`
	Type string `json:"type"`
	ID   string `json:"id"`
}

// awaitVMTasks waits for every task still running on VM vmid — started
// by another client, or by an Apply, Delete or action that was
// interrupted (killed, cancelled) and so never awaited it: a clone
// finishing into it, a config, start, shutdown, stop, reboot, resize or
// destroy. Acting on the VM meanwhile would be wrong: a destroy in flight
// would be adopted as the VM, a start in flight would fail the next start
// with "VM ... already running". It reports whether it waited; a task
// that failed is not an error (it was not this call's), one that outlasts
// its timeout is TRANSIENT. Proxmox lists to a token without Sys.Audit
// only its own tasks: those of other users are not seen.
func (p *Provider) awaitVMTasks(ctx context.Context, c *conn, node string, vmid int) (bool, error) {
	q := url.Values{"vmid": {strconv.Itoa(vmid)}, "source": {"active"}}
	var ts []vmTask
	if err := c.client.Get(ctx, "/nodes/"+url.PathEscape(node)+"/tasks?"+q.Encode(), &ts); err != nil {
		return false, fmt.Errorf("proxmox: context %q: list the tasks of VM %d on %s: %w", c.name, vmid, node, classify(err))
	}
	waited := false
	for _, t := range ts {
		if t.ID != strconv.Itoa(vmid) || t.UPID == "" {
			continue
		}
		registry.CallOf(ctx).ReportStep(fmt.Sprintf("waiting for task %s on VM %d, started elsewhere or by an interrupted run", t.Type, vmid))
		if err := p.await(ctx, c, pve.UPID(t.UPID), p.taskTimeout(t.Type)); err != nil && !taskFinished(err) {
			return waited, fmt.Errorf("waiting for task %s on VM %d: %w", t.Type, vmid, err)
		}
		waited = true
	}
	return waited, nil
}

// taskTimeout is how long a task of type typ may take (Timeouts).
func (p *Provider) taskTimeout(typ string) time.Duration {
	t := p.cfg.Timeouts
	switch typ {
	case "qmconfig":
		return t.Config
	case "qmstart":
		return t.Start
	case "qmstop":
		return t.Stop
	case "qmshutdown":
		return t.Shutdown + 30*time.Second
	case "qmreboot":
		return t.Reboot
	case "qmdestroy":
		return t.Destroy
	case "resize":
		return t.Resize
	}
	return t.Clone // the longest: clones, migrations, backups
}
