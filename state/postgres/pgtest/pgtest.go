// Package pgtest starts a throw-away PostgreSQL server for tests.
//
// A test binary starts at most one server, the first time a test calls
// [Start], and [Main] stops it and removes its files when the tests end.
// Every Start call creates a fresh, empty database on that server and
// returns its DSN, so tests are isolated from each other and may run in
// parallel:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
//	func TestSomething(t *testing.T) {
//		dsn := pgtest.Start(t) // postgres://postgres@127.0.0.1:PORT/t_3?sslmode=disable
//		...
//	}
//
// The server is PostgreSQL from /usr/lib/postgresql/<version>/bin (the
// newest version installed), from $OPENCTL_TEST_PG_BIN, or from the
// directory of initdb on $PATH. It runs in a temporary directory (initdb
// --auth=trust, so connections need no password) on a free loopback port,
// with its Unix socket in the same directory, and with durability switched
// off (fsync=off) because its data is thrown away. PostgreSQL refuses to
// run as root, so when the tests run as root the server runs as the
// "postgres" system user, which owns the temporary directory. The server
// gets SIGQUIT (immediate shutdown) if the test process dies without
// running Main's cleanup, so it never outlives the tests.
//
// Setting $OPENCTL_TEST_POSTGRES_DSN to the DSN of an existing server (for
// example a CI service container) uses that server instead of starting
// one; the role in the DSN must be allowed to CREATE DATABASE. Each test's
// database is dropped when the test ends.
//
// When no PostgreSQL binaries are found, Start ends the test with
// testenv.Unavailable: it skips it with a loud message — except under CI
// (the CI environment variable is true), where it fails it: CI must run
// the PostgreSQL tests, not skip them.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openctl/openctl/backoff"
	"github.com/openctl/openctl/internal/testenv"
)

// Environment variables read by this package.
const (
	// EnvDSN names an existing server to use instead of starting one.
	EnvDSN = "OPENCTL_TEST_POSTGRES_DSN"
	// EnvBin names the directory holding initdb and postgres.
	EnvBin = "OPENCTL_TEST_PG_BIN"
)

// startTimeout bounds initdb plus server start-up.
const startTimeout = 60 * time.Second

// ErrNoPostgres reports that no PostgreSQL binaries were found.
var ErrNoPostgres = errors.New("pgtest: no PostgreSQL binaries found (looked in $" + EnvBin + ", /usr/lib/postgresql/*/bin and $PATH)")

// The one server of this test binary.
var (
	inMain atomic.Bool  // set while Main runs
	dbSeq  atomic.Int64 // numbers the databases Start creates

	mu      sync.Mutex // guards the fields below
	started bool       // a start was attempted
	srv     *server    // the running server; nil if none
	srvErr  error      // why the start failed
	stopped bool       // Main stopped the server
)

// Main runs the tests and then stops the server Start started, if any, and
// removes its files. SIGINT and SIGTERM stop it too (then the tests exit
// with status 1). Call it from TestMain: func TestMain(m *testing.M) {
// pgtest.Main(m) }. It does not return.
func Main(m *testing.M) {
	inMain.Store(true)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		sig, ok := <-sigs
		if !ok {
			return
		}
		fmt.Fprintf(os.Stderr, "pgtest: %v: stopping the PostgreSQL server\n", sig)
		_ = stopServer()
		os.Exit(1)
	}()
	code := m.Run()
	signal.Stop(sigs)
	if err := stopServer(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// stopServer stops the server, once.
func stopServer() error {
	mu.Lock()
	defer mu.Unlock()
	if srv == nil || stopped {
		return nil
	}
	stopped = true
	return srv.stop()
}

// running returns the server, starting it on first use.
func running(ctx context.Context) (*server, error) {
	mu.Lock()
	defer mu.Unlock()
	if stopped {
		return nil, errors.New("pgtest: the server was stopped")
	}
	if !started {
		started = true
		srv, srvErr = startServer(ctx)
	}
	return srv, srvErr
}

// Start returns the DSN of a new, empty database on this test binary's
// PostgreSQL server, starting the server on first use. The database is
// dropped when tb ends. Start skips tb if no PostgreSQL is installed
// (failing it instead under CI) and fails tb if the server cannot be
// started. The test binary's TestMain must call [Main].
func Start(tb testing.TB) string {
	tb.Helper()
	if !inMain.Load() {
		tb.Fatal("pgtest: Start needs the server to be stopped at exit: add func TestMain(m *testing.M) { pgtest.Main(m) } to the test package")
	}
	// The server outlives the test that starts it: keep tb's values, not
	// its cancellation.
	s, err := running(context.WithoutCancel(tb.Context()))
	if err != nil {
		if errors.Is(err, ErrNoPostgres) {
			testenv.Unavailable(tb, "\n*** %v.\n*** The PostgreSQL store is NOT tested. Install PostgreSQL (apt-get install postgresql) or set $%s. ***", err, EnvDSN)
			return ""
		}
		tb.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(tb.Context(), 30*time.Second)
	defer cancel()
	name := fmt.Sprintf("t_%d_%d", os.Getpid(), dbSeq.Add(1))
	if err := s.exec(ctx, "CREATE DATABASE "+name); err != nil {
		tb.Fatalf("pgtest: create database %s: %v", name, err)
	}
	tb.Cleanup(func() {
		// tb.Context is cancelled before Cleanup runs.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if err := s.exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			tb.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	return s.dsnFor(name)
}

// server is a running PostgreSQL server, or an external one.
type server struct {
	base *url.URL  // DSN of the maintenance database
	dir  string    // temporary directory, "" for an external server
	cmd  *exec.Cmd // the postmaster, nil for an external server
	done chan struct{}
	log  string // path of the server log
}

// dsnFor returns the DSN of database db.
func (s *server) dsnFor(db string) string {
	u := *s.base
	u.Path = "/" + db
	return u.String()
}

// exec runs one statement on the maintenance database.
func (s *server) exec(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, s.base.String())
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, sql)
	return err
}

// startServer starts a server (or adopts $OPENCTL_TEST_POSTGRES_DSN).
func startServer(ctx context.Context) (*server, error) {
	if dsn := os.Getenv(EnvDSN); dsn != "" {
		u, err := url.Parse(dsn)
		if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			return nil, fmt.Errorf("pgtest: $%s must be a postgres:// URL", EnvDSN)
		}
		return &server{base: u}, nil
	}
	bin, err := findBin()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()

	runAs, err := serverUser()
	if err != nil {
		return nil, err
	}
	base := baseDir(runAs != nil)
	removeStale(base)
	dir, err := os.MkdirTemp(base, fmt.Sprintf("%s%d-", dirPrefix, os.Getpid()))
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	s := &server{dir: dir, log: filepath.Join(dir, "server.log")}
	fail := func(err error) (*server, error) {
		_ = s.stop()
		return nil, err
	}
	if runAs != nil {
		if err := os.Chown(dir, int(runAs.Uid), int(runAs.Gid)); err != nil {
			return fail(fmt.Errorf("pgtest: %w", err))
		}
	}
	data := filepath.Join(dir, "data")
	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"),
		"-D", data, "-U", "postgres", "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync", "--no-instructions")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: runAs, Pdeathsig: syscall.SIGKILL}
	initdb.Dir = dir
	if out, err := initdb.CombinedOutput(); err != nil {
		return fail(fmt.Errorf("pgtest: initdb: %w\n%s", err, out))
	}

	// A free port may be taken between closing the probe listener and the
	// server binding it; try a few.
	var lastErr error
	for range 5 {
		port, err := freePort()
		if err != nil {
			return fail(err)
		}
		err = s.startPostmaster(ctx, bin, data, runAs, port)
		if err == nil {
			return s, nil
		}
		lastErr = err
		if ctx.Err() != nil {
			break
		}
	}
	return fail(lastErr)
}

// startPostmaster runs postgres on port and waits until it accepts
// connections.
func (s *server) startPostmaster(ctx context.Context, bin, data string, runAs *syscall.Credential, port int) error {
	logf, err := os.OpenFile(s.log, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(filepath.Join(bin, "postgres"),
		"-D", data,
		"-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories="+s.dir,
		"-c", "max_connections=300",
		"-c", "fsync=off",
		"-c", "synchronous_commit=off",
		"-c", "full_page_writes=off",
		"-c", "shared_buffers=32MB",
	)
	cmd.Dir = s.dir
	cmd.Stdout = logf
	cmd.Stderr = logf
	// SIGQUIT is PostgreSQL's immediate shutdown: if this process dies
	// without stopping the server, the server goes with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: runAs, Pdeathsig: syscall.SIGQUIT, Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("pgtest: start postgres: %w", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	s.cmd, s.done = cmd, done
	s.base = &url.URL{Scheme: "postgres", User: url.User("postgres"), Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Path: "/postgres", RawQuery: "sslmode=disable"}

	// Look every 10 ms doubling to 200 ms.
	b := backoff.Policy{Initial: 10 * time.Millisecond, Max: 200 * time.Millisecond}.Start()
	for {
		select {
		case <-done:
			s.cmd, s.done = nil, nil
			return fmt.Errorf("pgtest: postgres exited during start-up:\n%s", s.logTail())
		default:
		}
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := s.exec(pctx, "SELECT 1")
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			_ = s.kill()
			return fmt.Errorf("pgtest: postgres did not accept connections within %v: %w\n%s", startTimeout, err, s.logTail())
		}
		// An exit during the wait is seen at the top of the loop; a
		// cancelled ctx by the check above.
		_ = backoff.Sleep(ctx, b.Next())
	}
}

// kill stops the postmaster: SIGINT (fast shutdown), then SIGQUIT
// (immediate), then SIGKILL to its process group.
func (s *server) kill() error {
	if s.cmd == nil {
		return nil
	}
	defer func() { s.cmd, s.done = nil, nil }()
	for _, step := range []struct {
		sig  syscall.Signal
		wait time.Duration
	}{{syscall.SIGINT, 20 * time.Second}, {syscall.SIGQUIT, 5 * time.Second}} {
		_ = s.cmd.Process.Signal(step.sig)
		select {
		case <-s.done:
			return nil
		case <-time.After(step.wait):
		}
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.done
	return fmt.Errorf("pgtest: postgres (pid %d) ignored SIGINT and SIGQUIT and was killed", s.cmd.Process.Pid)
}

// stop stops the server and removes its directory.
func (s *server) stop() error {
	err := s.kill()
	if s.dir != "" {
		if rerr := os.RemoveAll(s.dir); rerr != nil {
			err = errors.Join(err, fmt.Errorf("pgtest: %w", rerr))
		}
	}
	return err
}

// logTail returns the end of the server log.
func (s *server) logTail() string {
	f, err := os.Open(s.log)
	if err != nil {
		return ""
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, 1<<20))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// dirPrefix starts the names of the servers' temporary directories, which
// continue with the PID of the test process.
const dirPrefix = "openctl-pgtest-"

// removeStale removes the directories of servers whose test process and
// postmaster are both gone: a test binary killed outright (go test
// -timeout, SIGKILL) cannot clean up after itself. Its server died with it
// (SIGQUIT on parent death).
func removeStale(base string) {
	dirs, _ := filepath.Glob(filepath.Join(base, dirPrefix+"*"))
	for _, d := range dirs {
		pidPart, _, ok := strings.Cut(strings.TrimPrefix(filepath.Base(d), dirPrefix), "-")
		pid, err := strconv.Atoi(pidPart)
		if !ok || err != nil || pid == os.Getpid() || alive(pid) {
			continue
		}
		if b, err := os.ReadFile(filepath.Join(d, "data", "postmaster.pid")); err == nil {
			line, _, _ := strings.Cut(string(b), "\n")
			if pm, err := strconv.Atoi(strings.TrimSpace(line)); err == nil && alive(pm) {
				continue
			}
		}
		_ = os.RemoveAll(d)
	}
}

// baseDir returns the directory to create the server's directory in: the
// temporary directory, unless the server runs as another user who cannot
// reach it (a $TMPDIR under /root), then /tmp.
func baseDir(otherUser bool) string {
	base := os.TempDir()
	if !otherUser {
		return base
	}
	for d := base; ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil || st.Mode().Perm()&0o001 == 0 {
			return "/tmp"
		}
		if d == filepath.Dir(d) {
			return base
		}
	}
}

// alive reports whether process pid exists.
func alive(pid int) bool {
	return pid > 0 && !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// findBin returns the directory holding initdb and postgres.
func findBin() (string, error) {
	ok := func(dir string) bool {
		for _, f := range []string{"initdb", "postgres"} {
			if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.IsDir() {
				return false
			}
		}
		return true
	}
	if dir := os.Getenv(EnvBin); dir != "" {
		if !ok(dir) {
			return "", fmt.Errorf("%w: $%s=%s has no initdb and postgres", ErrNoPostgres, EnvBin, dir)
		}
		return dir, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	// Newest version first: compare the version directories numerically.
	slices.SortFunc(dirs, func(a, b string) int {
		va, _ := strconv.Atoi(filepath.Base(filepath.Dir(a)))
		vb, _ := strconv.Atoi(filepath.Base(filepath.Dir(b)))
		return vb - va
	})
	if p, err := exec.LookPath("initdb"); err == nil {
		dirs = append(dirs, filepath.Dir(p))
	}
	for _, d := range dirs {
		if ok(d) {
			return d, nil
		}
	}
	return "", ErrNoPostgres
}

// serverUser returns the credentials to run PostgreSQL with: nil (this
// user) unless running as root, then the "postgres" system user.
func serverUser() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("pgtest: running as root, and PostgreSQL refuses to; no \"postgres\" user to run it as: %w", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("pgtest: user postgres has a non-numeric uid/gid %s/%s", u.Uid, u.Gid)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgtest: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
