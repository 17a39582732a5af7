package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openctl/openctl/backoff"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/state"
)

const (
	// holderWait bounds how long a Lock that lost waits for the holder to
	// record who it is (it writes its row just after taking the lock).
	holderWait = 2 * time.Second
	// releaseTimeout bounds unlocking (which has no context of its own).
	releaseTimeout = 10 * time.Second
	// forceWait bounds how long ForceUnlock waits for a terminated holder's
	// session to end, on top of ctx.
	forceWait = 30 * time.Second
)

// Backoff policies of the lock waits.
var (
	// holderPolicy spaces a losing Lock's looks for the holder's info row:
	// 5 ms doubling to 100 ms.
	holderPolicy = backoff.Policy{Initial: 5 * time.Millisecond, Max: 100 * time.Millisecond}
	// releasePolicy spaces ForceUnlock's looks for the terminated holder's
	// advisory lock: 5 ms doubling to 200 ms.
	releasePolicy = backoff.Policy{Initial: 5 * time.Millisecond, Max: 200 * time.Millisecond}
)

// lockKey is the advisory lock key of a scope.
func lockKey(scope string) int64 { return advisoryKey("lock\x00" + scope) }

// holderSQL finds the backend holding the advisory lock with key
// ($1 >> 32, $1 & 0xffffffff) in this database: how pg_locks shows a
// session lock taken with a bigint key.
const holderSQL = `SELECT l.pid FROM pg_locks l WHERE ` + holderCond

// holderCond is holderSQL's condition on pg_locks l.
const holderCond = `l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND l.classid::bigint = ($1::bigint >> 32) & 4294967295 AND l.objid::bigint = $1::bigint & 4294967295`

// forceDeleteSQL deletes the info row of the lock with key $1 on scope $2
// unless its backend holds the advisory lock now.
const forceDeleteSQL = `DELETE FROM openctl_locks WHERE scope = $2
  AND NOT EXISTS (SELECT 1 FROM pg_locks l WHERE ` + holderCond + ` AND l.pid = openctl_locks.backend_pid)`

// heldLock is a lock this Store holds: the dedicated connection whose
// session holds the advisory lock.
type heldLock struct {
	s     *Store
	scope string
	id    string // LockInfo.ID, identifies our info row
	key   int64
	conn  *pgx.Conn
	// base is the Lock call's context without its cancellation: unlock
	// has no context of its own and must work after the caller's ended.
	base context.Context

	once sync.Once
	err  error // of the first unlock
}

// Lock takes the lock on scope: a session-level advisory lock
// (pg_try_advisory_lock) on a connection of its own, held until unlock is
// called, Close is called or the process ends (the server ends the session
// and so releases the lock when the connection closes, or when TCP
// keepalives find the client gone, within about a minute). Taking it
// writes info to openctl_locks for others to read. If another client holds
// it, Lock returns at once with a *state.LockedError (errcode.Conflict)
// naming the holder.
func (s *Store) Lock(ctx context.Context, scope string, info state.LockInfo) (func() error, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if scope == "" {
		return nil, errcode.New(errcode.Invalid, "postgres: lock scope is empty")
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return nil, errcode.New(errcode.Invalid, "postgres: Lock on a closed Store")
	}
	if info.ID == "" {
		info.ID = state.NewID()
	}
	if info.Created.IsZero() {
		info.Created = time.Now()
	}
	info.Scope = scope
	info.Created = info.Created.UTC().Truncate(time.Microsecond)
	key := lockKey(scope)

	conn, err := pgx.ConnectConfig(ctx, s.lockConf)
	if err != nil {
		return nil, s.connectErr(err)
	}
	handedOver := false
	defer func() {
		if !handedOver {
			_ = conn.Close(context.WithoutCancel(ctx))
		}
	}()

	start := time.Now()
	b := holderPolicy.Start()
	for {
		var got bool
		if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", key).Scan(&got); err != nil {
			return nil, s.dbErr("taking lock "+scope, err)
		}
		if got {
			break
		}
		holder, known, backend, err := s.holder(ctx, conn, scope, key)
		if err != nil {
			return nil, err
		}
		if known {
			return nil, &state.LockedError{Scope: scope, Holder: holder}
		}
		// The holder has not written its row yet, or has just released the
		// lock (backend 0): look again shortly.
		if time.Since(start) > holderWait {
			detail := fmt.Sprintf("the holder (PostgreSQL backend %d in %s) has not recorded who it is; openctl_locks shows the last holder", backend, s.where)
			if backend == 0 {
				detail = "the lock was held but its holder could not be found in pg_locks"
			}
			return nil, &state.LockedError{Scope: scope, Holder: holder, Detail: detail}
		}
		if err := b.Wait(ctx); err != nil {
			return nil, fmt.Errorf("postgres: waiting for the holder of lock %s to record who it is: %w", scope, err)
		}
	}

	// A row left by a holder that died is overwritten.
	if _, err := conn.Exec(ctx, `INSERT INTO openctl_locks (scope, lock_id, who, host, pid, operation, created, backend_pid)
VALUES ($1, $2, $3, $4, $5, $6, $7, pg_backend_pid())
ON CONFLICT (scope) DO UPDATE SET lock_id = EXCLUDED.lock_id, who = EXCLUDED.who, host = EXCLUDED.host, pid = EXCLUDED.pid,
	operation = EXCLUDED.operation, created = EXCLUDED.created, backend_pid = EXCLUDED.backend_pid`,
		scope, info.ID, info.Who, info.Host, info.PID, info.Operation, info.Created); err != nil {
		return nil, s.dbErr("recording lock "+scope, err) // closing conn releases the lock
	}
	l := &heldLock{s: s, scope: scope, id: info.ID, key: key, conn: conn, base: context.WithoutCancel(ctx)}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errcode.New(errcode.Invalid, "postgres: Lock on a closed Store")
	}
	s.held[l] = true
	s.mu.Unlock()
	handedOver = true
	return l.unlock, nil
}

// holder reads who holds the lock on scope. known reports that the info
// row belongs to the session that holds the advisory lock now; otherwise
// the row (if any) is stale or not written yet, and backend is the holding
// session's PID (0: nobody holds the lock any more).
func (s *Store) holder(ctx context.Context, q querier, scope string, key int64) (info state.LockInfo, known bool, backend int32, err error) {
	err = q.QueryRow(ctx, holderSQL, key).Scan(&backend)
	if errors.Is(err, pgx.ErrNoRows) {
		return info, false, 0, nil
	}
	if err != nil {
		return info, false, 0, s.dbErr("reading lock "+scope, err)
	}
	var rowBackend int32
	var pid int32
	err = q.QueryRow(ctx, "SELECT lock_id, who, host, pid, operation, created, backend_pid FROM openctl_locks WHERE scope = $1", scope).
		Scan(&info.ID, &info.Who, &info.Host, &pid, &info.Operation, &info.Created, &rowBackend)
	if errors.Is(err, pgx.ErrNoRows) {
		return state.LockInfo{Scope: scope}, false, backend, nil
	}
	if err != nil {
		return info, false, 0, s.dbErr("reading lock "+scope, err)
	}
	info.Scope, info.PID, info.Created = scope, int(pid), info.Created.UTC()
	return info, rowBackend == backend, backend, nil
}

// unlock releases the lock: deletes its info row, releases the advisory
// lock and closes the connection. If the lock was lost while held — the
// connection broke (network trouble, keepalives expired, ForceUnlock
// terminated the session) or pg_advisory_unlock reports that the session
// no longer held it — another client may have taken the lock and run in
// the meantime, and unlock returns lostLockError (errcode.Conflict) so the
// holder does not take its work for protected. unlock is idempotent:
// later calls return the first call's result (nil or the same error).
func (l *heldLock) unlock() error {
	l.once.Do(func() {
		ctx, cancel := context.WithTimeout(l.base, releaseTimeout)
		defer cancel()
		released := false
		_, err := l.conn.Exec(ctx, "DELETE FROM openctl_locks WHERE scope = $1 AND lock_id = $2", l.scope, l.id)
		if err == nil {
			err = l.conn.QueryRow(ctx, "SELECT pg_advisory_unlock($1)", l.key).Scan(&released)
		}
		broken := l.conn.IsClosed()
		_ = l.conn.Close(ctx)
		l.s.mu.Lock()
		delete(l.s.held, l)
		l.s.mu.Unlock()
		switch {
		case err == nil && released:
		case err == nil:
			// The session is alive but did not hold the advisory lock.
			l.err = l.lostLockError(nil)
		case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
			// The server did not answer in time: closing the connection
			// ends the session, which releases the lock.
			l.err = l.s.dbErr("releasing lock "+l.scope, err)
		case broken:
			// The session is gone (ForceUnlock terminated it, or the
			// connection broke): the server released, or will release once
			// keepalives notice, the advisory lock with it — possibly long
			// ago, and another client may have held it since.
			l.err = l.lostLockError(err)
		default:
			// Closing the connection ended the session, which releases the
			// lock; the info row may remain, and the next holder
			// overwrites it.
			l.err = l.s.dbErr("releasing lock "+l.scope, err)
		}
		if l.err != nil {
			l.s.log.Warn("postgres: releasing a state lock failed", "scope", l.scope, "database", l.s.where, "err", l.err)
		}
	})
	return l.err
}

// lostLockError reports a lock lost while held; cause is why (nil: the
// session did not hold the advisory lock at unlock).
func (l *heldLock) lostLockError(cause error) error {
	msg := fmt.Sprintf("postgres: the lock on scope %q was lost while held (connection closed or force-unlocked); another client may have run meanwhile", l.scope)
	if cause == nil {
		return errcode.New(errcode.Conflict, msg)
	}
	return errcode.Wrap(errcode.Conflict, msg, cause)
}

// ForceUnlock breaks the lock on scope: it terminates the holding session
// (pg_terminate_backend, which needs the holder's role or
// pg_signal_backend), waits until the advisory lock is released, and
// deletes the lock-info row (unless a new holder wrote it meanwhile). The
// holder, if still running, loses its lock without notice until its
// unlock, which then returns an errcode.Conflict error: use it only when
// the holder is known to be gone or stuck (openctl state force-unlock).
// Breaking a lock nobody holds is not an error.
//
// As with the file store, a holder that is a process of this host that
// still runs (state.HolderRunning) is refused, with a *state.LockedError
// that has Running set and names it, unless opts.Force is set. A holder
// on another host cannot be checked from here: its session holds the
// lock, so its client was connected a minute ago at most (keepalives).
// A holder that died needs no ForceUnlock: its session ends when its
// connection closes, and that releases the lock.
func (s *Store) ForceUnlock(ctx context.Context, scope string, opts state.ForceUnlockOptions) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	key := lockKey(scope)
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return s.connectErr(err)
	}
	defer conn.Release()
	info, known, backend, err := s.holder(ctx, conn, scope, key)
	if err != nil {
		return err
	}
	if backend != 0 && known && !opts.Force && info.Status() == state.HolderRunning {
		return &state.LockedError{Scope: scope, Holder: info, Running: true, Detail: fmt.Sprintf("PostgreSQL backend %d in %s", backend, s.where)}
	}
	if backend != 0 {
		var ok bool
		if err := conn.QueryRow(ctx, "SELECT pg_terminate_backend($1)", backend).Scan(&ok); err != nil {
			return s.dbErr(fmt.Sprintf("terminating PostgreSQL backend %d, which holds lock %s", backend, scope), err)
		}
		wctx, cancel := context.WithTimeout(ctx, forceWait)
		defer cancel()
		for b := releasePolicy.Start(); ; {
			var pid int32
			err := conn.QueryRow(wctx, holderSQL, key).Scan(&pid)
			if errors.Is(err, pgx.ErrNoRows) || (err == nil && pid != backend) {
				break
			}
			if err != nil {
				return s.dbErr(fmt.Sprintf("waiting for PostgreSQL backend %d to release lock %s", backend, scope), err)
			}
			if err := b.Wait(wctx); err != nil {
				return errcode.Wrap(errcode.Transient, fmt.Sprintf("postgres: PostgreSQL backend %d still holds lock %s after pg_terminate_backend", backend, scope), err)
			}
		}
	}
	if s.forceTerminated != nil {
		s.forceTerminated()
	}
	// Delete the info row unless it is the current holder's: a client may
	// have taken the lock (and written its row) since the holder ended, and
	// its row must stay. Deleting only rows whose backend does not hold the
	// advisory lock now removes the terminated holder's row (and any stale
	// one) but never a live holder's, which writes its row only once it
	// holds the lock.
	if _, err := conn.Exec(ctx, forceDeleteSQL, key, scope); err != nil {
		return s.dbErr("deleting the information of lock "+scope, err)
	}
	if backend != 0 {
		s.log.Warn("postgres: state lock forcibly released", "scope", scope, "database", s.where, "backend_pid", backend,
			"who", info.Who, "host", info.Host, "pid", info.PID, "operation", info.Operation, "since", info.Created)
	}
	return nil
}
