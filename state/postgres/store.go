package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/secret"
	"github.com/openctl/openctl/state"
	"github.com/openctl/openctl/state/seal"
)

// EnvDSN is the environment variable Open reads when given no DSN.
const EnvDSN = "OPENCTL_STATE_DSN"

// TCP keepalive settings for every connection, on both ends: the client
// notices a vanished server, and the server notices a vanished client — and
// ends its session, releasing its locks — after about
// keepAliveIdle + keepAliveCount*keepAliveInterval (one minute) of silence.
const (
	keepAliveIdle     = 30 * time.Second
	keepAliveInterval = 10 * time.Second
	keepAliveCount    = 3
)

// defaultConnectTimeout bounds a connection attempt when the DSN sets no
// connect_timeout.
const defaultConnectTimeout = 30 * time.Second

// Options configure a Store. The zero value is ready to use.
type Options struct {
	// Passphrase returns the passphrase that seals the store's data key. It
	// is called at most once in the Store's life, the first time a record
	// with secrets is written or read. nil means seal.Passphrase
	// ($OPENCTL_STATE_PASSPHRASE or $OPENCTL_STATE_PASSPHRASE_FILE).
	Passphrase func() (secret.Secret, error)
	// Logger receives warnings (a lock broken under its holder, a forced
	// unlock). nil discards them.
	Logger *slog.Logger
}

// Store is a state.Store and state.RawStore kept in a PostgreSQL database.
// Create it with Open and release it with Close. It is safe for concurrent
// use by goroutines, and by any number of processes sharing the database.
type Store struct {
	pool     *pgxpool.Pool
	lockConf *pgx.ConnConfig // template for the dedicated lock connections
	where    string          // "host:port/database", for messages
	log      *slog.Logger
	keys     keyring

	mu     sync.Mutex         // guards held and closed
	held   map[*heldLock]bool // locks this Store holds
	closed bool               // Close was called

	// forceTerminated, if set (by tests), runs in ForceUnlock after the
	// holder's session has ended and before its info row is deleted.
	forceTerminated func()
}

var (
	_ state.Store    = (*Store)(nil)
	_ state.RawStore = (*Store)(nil)
	_ state.Unlocker = (*Store)(nil)
	_ state.Sealer   = (*Store)(nil)
)

// Open connects to the PostgreSQL database dsn names ("" means
// $OPENCTL_STATE_DSN), in URL form (postgres://user:pass@host:5432/db) or
// key=value form (host=... dbname=...), and creates or migrates the
// openctl tables. Connecting and migrating are bounded by ctx: a server
// that cannot be reached is an error naming its host and port (never the
// password) when ctx ends, not a hang. Open's errors match
// errcode.Invalid (a malformed DSN, a schema newer than this openctl),
// errcode.Unauthorized (the server refused the credentials) or
// errcode.Transient (the server could not be reached).
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	if dsn == "" {
		dsn = os.Getenv(EnvDSN)
	}
	if dsn == "" {
		return nil, errcode.New(errcode.Invalid, "postgres: no database to keep state in: set "+EnvDSN+" (for example postgres://openctl@db.example:5432/openctl)")
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgconn redacts the password of a DSN it cannot parse.
		return nil, errcode.Wrap(errcode.Invalid, "postgres: bad DSN", err)
	}
	cc := cfg.ConnConfig
	if _, ok := cc.RuntimeParams["application_name"]; !ok {
		cc.RuntimeParams["application_name"] = "openctl"
	}
	dialer := &net.Dialer{KeepAliveConfig: net.KeepAliveConfig{
		Enable: true, Idle: keepAliveIdle, Interval: keepAliveInterval, Count: keepAliveCount,
	}}
	cc.DialFunc = dialer.DialContext
	if cc.ConnectTimeout == 0 {
		// Bounds every connection attempt, including those a lock makes
		// in the middle of an operation whose context has no deadline.
		cc.ConnectTimeout = defaultConnectTimeout
	}
	lockConf := cc.Copy()
	// The server ends the session of a client it has not heard from, and
	// so releases its advisory locks, only if it probes the connection:
	// ask for keepalives on lock connections unless the DSN chose.
	for _, p := range [][2]string{
		{"tcp_keepalives_idle", strconv.Itoa(int(keepAliveIdle.Seconds()))},
		{"tcp_keepalives_interval", strconv.Itoa(int(keepAliveInterval.Seconds()))},
		{"tcp_keepalives_count", strconv.Itoa(keepAliveCount)},
	} {
		if _, ok := lockConf.RuntimeParams[p[0]]; !ok {
			lockConf.RuntimeParams[p[0]] = p[1]
		}
	}

	where := net.JoinHostPort(cc.Host, strconv.Itoa(int(cc.Port)))
	if cc.Database != "" {
		where += "/" + cc.Database
	}
	s := &Store{
		lockConf: lockConf,
		where:    where,
		log:      opts.Logger,
		held:     map[*heldLock]bool{},
	}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s.keys.unlocker = seal.NewUnlocker(seal.WarnWeak(opts.Passphrase, s.log))
	s.keys.store = s
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, s.connectErr(err)
	}
	s.pool = pool
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

// connectErr explains a failure to reach or log in to the server.
func (s *Store) connectErr(err error) error {
	code := errcode.Transient
	var pe *pgconn.PgError
	if errors.As(err, &pe) && sqlClass(pe.Code) == "28" { // invalid_authorization_specification, invalid_password
		code = errcode.Unauthorized
	} else if errors.As(err, &pe) && pe.Code == "3D000" { // invalid_catalog_name: no such database
		code = errcode.Invalid
	}
	return errcode.Wrap(code, "postgres: cannot connect to the state database "+s.where, err)
}

// Close releases the locks this Store still holds (their sessions end) and
// closes its connections. The Store is unusable afterwards.
func (s *Store) Close() error {
	s.mu.Lock()
	held := make([]*heldLock, 0, len(s.held))
	for l := range s.held {
		held = append(held, l)
	}
	s.closed = true
	s.mu.Unlock()
	var errs []error
	for _, l := range held {
		errs = append(errs, l.unlock())
	}
	s.pool.Close()
	return errors.Join(errs...)
}

// dbErr wraps a failed query. Connection trouble and serialization
// failures are Transient; everything else is Internal.
func (s *Store) dbErr(what string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("postgres: %s: %w", what, err)
	}
	code := errcode.Internal
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &pe):
		switch c := sqlClass(pe.Code); {
		case c == "08", c == "53", c == "57", pe.Code == "40001", pe.Code == "40P01":
			// connection exception, insufficient resources, operator
			// intervention (shutdown, terminated), serialization failure,
			// deadlock
			code = errcode.Transient
		case c == "28", pe.Code == "42501": // invalid authorization, insufficient_privilege
			code = errcode.Unauthorized
		case c == "22": // data exception, e.g. \u0000 in a jsonb string
			code = errcode.Invalid
		}
	case pgconn.SafeToRetry(err), pgconn.Timeout(err):
		code = errcode.Transient
	default:
		var ne net.Error
		var ce *pgconn.ConnectError
		if errors.As(err, &ne) || errors.As(err, &ce) {
			code = errcode.Transient
		}
	}
	return errcode.Wrap(code, fmt.Sprintf("postgres: %s (%s)", what, s.where), err)
}

// sqlClass returns the class (first two characters) of a SQLSTATE.
func sqlClass(code string) string {
	if len(code) < 2 {
		return ""
	}
	return code[:2]
}
