package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/state"
	"github.com/openctl/openctl/state/seal"
)

// recordColumns are the columns scanRecord reads, in order.
const recordColumns = `apiversion, kind, name, labels, spec, spec_hash, status, owner, children,
	secrets_ciphertext, secrets_mac, generation, lineage, created_at, updated_at`

// row is a record as stored: the record without secrets and the sealed
// secrets, if any.
type row struct {
	rec    *state.Record
	sealed *seal.Sealed
}

// scanRecord reads one row of recordColumns.
func scanRecord(r pgx.Row) (row, error) {
	var (
		rec                  state.Record
		labels, spec, status []byte
		owner, children      []byte
		ciphertext, mac      *string
	)
	if err := r.Scan(&rec.APIVersion, &rec.Kind, &rec.Name, &labels, &spec, &rec.SpecHash, &status, &owner, &children,
		&ciphertext, &mac, &rec.Generation, &rec.Lineage, &rec.CreatedAt, &rec.UpdatedAt); err != nil {
		return row{}, err
	}
	rec.CreatedAt, rec.UpdatedAt = rec.CreatedAt.UTC(), rec.UpdatedAt.UTC()
	err := errors.Join(
		decodeJSON(labels, &rec.Labels, "labels"),
		decodeJSON(owner, &rec.Owner, "owner"),
		decodeJSON(children, &rec.Children, "children"),
	)
	if err == nil {
		rec.Spec, err = decodeMap(spec, "spec")
	}
	if err == nil {
		rec.Status, err = decodeMap(status, "status")
	}
	if err != nil {
		return row{}, state.Corrupt("postgres: record "+rec.ID().String()+" is corrupt", err)
	}
	out := row{rec: &rec}
	if ciphertext != nil && mac != nil {
		out.sealed = &seal.Sealed{Ciphertext: *ciphertext, MAC: *mac}
	}
	return out, nil
}

// scanErr wraps an error of scanRecord: a corrupt row is already
// classified, anything else is the database's.
func (s *Store) scanErr(what string, err error) error {
	var ec *errcode.Error
	if errors.As(err, &ec) {
		return err
	}
	return s.dbErr(what, err)
}

// open returns the record of rw with its secrets opened.
func (s *Store) open(ctx context.Context, rw row, ring **seal.Keyring) (*state.Record, error) {
	if rw.sealed == nil {
		return rw.rec, nil
	}
	if *ring == nil {
		r, _, err := s.keys.get(ctx, false)
		if err != nil {
			return nil, err
		}
		*ring = r
	}
	secrets, err := (*ring).Open(rw.rec.ID(), rw.sealed)
	if err != nil {
		return nil, fmt.Errorf("postgres: reading %s from %s: %w", rw.rec.ID().Short(), s.where, err)
	}
	rw.rec.Secrets = secrets
	return rw.rec, nil
}

// Get returns the record for id, secrets opened. A missing record matches
// errcode.NotFound; sealed secrets that fail their integrity check are a
// *seal.TamperedError (errcode.Invalid).
func (s *Store) Get(ctx context.Context, id manifest.ID) (*state.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := id.Validate(); err != nil {
		return nil, err
	}
	rw, err := scanRecord(s.pool.QueryRow(ctx, "SELECT "+recordColumns+" FROM openctl_records WHERE provider = $1 AND kind = $2 AND name = $3 AND apiversion = $4",
		state.GroupKey(id.Group()), id.Kind, id.Name, id.APIVersion))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, state.NotFoundError(id)
	}
	if err != nil {
		return nil, s.scanErr("reading "+id.Short(), err)
	}
	var ring *seal.Keyring
	return s.open(ctx, rw, &ring)
}

// List returns the records matching f, sorted by ID, secrets opened. One
// passphrase derivation at most, however many records carry secrets.
func (s *Store) List(ctx context.Context, f state.Filter) ([]*state.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var (
		conds []string
		args  []any
	)
	arg := func(cond string, v any) {
		args = append(args, v)
		conds = append(conds, strings.ReplaceAll(cond, "$?", "$"+strconv.Itoa(len(args))))
	}
	if f.Group != "" {
		arg("provider = $?", state.GroupKey(f.Group))
	}
	if f.Kind != "" {
		arg("kind = $?", f.Kind)
	}
	if f.Owner != nil {
		b, err := encodeJSON(f.Owner, false, "owner filter")
		if err != nil {
			return nil, err
		}
		arg("owner = $?::jsonb", string(b))
	}
	q := "SELECT " + recordColumns + " FROM openctl_records"
	if len(conds) > 0 {
		q += " WHERE " + strings.Join(conds, " AND ")
	}
	rows, err := s.readRows(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	out := make([]*state.Record, 0, len(rows))
	var ring *seal.Keyring
	for _, rw := range rows {
		rec, err := s.open(ctx, rw, &ring)
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	return out, nil
}

// readRows runs a query of recordColumns and returns its rows sorted by
// ID (in Go, so the order does not depend on the database's collation).
func (s *Store) readRows(ctx context.Context, q string, args ...any) ([]row, error) {
	rs, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, s.dbErr("listing records", err)
	}
	defer rs.Close()
	var out []row
	for rs.Next() {
		rw, err := scanRecord(rs)
		if err != nil {
			return nil, s.scanErr("listing records", err)
		}
		out = append(out, rw)
	}
	if err := rs.Err(); err != nil {
		return nil, s.dbErr("listing records", err)
	}
	slices.SortFunc(out, func(a, b row) int { return a.rec.ID().Compare(b.rec.ID()) })
	return out, nil
}

// Delete removes the record for id; a missing record is not an error.
func (s *Store) Delete(ctx context.Context, id manifest.ID) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := id.Validate(); err != nil {
		return err
	}
	_, err := s.pool.Exec(ctx, "DELETE FROM openctl_records WHERE provider = $1 AND kind = $2 AND name = $3 AND apiversion = $4",
		state.GroupKey(id.Group()), id.Kind, id.Name, id.APIVersion)
	return s.dbErr("deleting "+id.Short(), err)
}

// columns is a record encoded for its row.
type columns struct {
	labels, spec, status, owner, children []byte
	ciphertext, mac                       *string
	keyCheck                              string // Check of the key that sealed the secrets, "" without secrets
}

// encode turns rec (secrets already sealed into sealed) into column values.
func encode(rec *state.Record, sealed *seal.Sealed, keyCheck string) (columns, error) {
	var c columns
	var err error
	if c.labels, err = encodeJSON(rec.Labels, rec.Labels == nil, "labels"); err != nil {
		return c, err
	}
	if c.spec, err = encodeMap(rec.Spec, "spec"); err != nil {
		return c, err
	}
	if c.status, err = encodeMap(rec.Status, "status"); err != nil {
		return c, err
	}
	if c.owner, err = encodeJSON(rec.Owner, rec.Owner == nil, "owner"); err != nil {
		return c, err
	}
	if c.children, err = encodeJSON(rec.Children, len(rec.Children) == 0, "children"); err != nil {
		return c, err
	}
	if sealed != nil {
		c.ciphertext, c.mac, c.keyCheck = &sealed.Ciphertext, &sealed.MAC, keyCheck
	}
	return c, nil
}

// keyGuard makes a write that stores sealed secrets conditional on the
// key that sealed them still being the store's key ($n is its Check, ""
// when the record has no secrets). FOR SHARE holds the key row until the
// write commits, so ImportRaw cannot swap the key in between.
func keyGuard(n int) string {
	p := "$" + strconv.Itoa(n)
	return "(" + p + " = '' OR EXISTS (SELECT 1 FROM openctl_key WHERE id = 1 AND key_check = " + p + " FOR SHARE))"
}

var (
	insertSQL = `INSERT INTO openctl_records (apiversion, kind, name, provider, labels, spec, spec_hash, status, owner, children,
	secrets_ciphertext, secrets_mac, generation, lineage, created_at, updated_at)
SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, 1, $13, $14, $15
WHERE ` + keyGuard(16) + `
ON CONFLICT (provider, kind, name) DO NOTHING`

	// $13 is the lineage the writer read ("": any). Matching it as well as
	// the generation rejects a write from a copy of a record that was
	// deleted and recreated (to the same generation) since it was read.
	updateSQL = `UPDATE openctl_records SET labels = $5, spec = $6, spec_hash = $7, status = $8, owner = $9, children = $10,
	secrets_ciphertext = $11, secrets_mac = $12, generation = generation + 1, updated_at = $14
WHERE provider = $4 AND kind = $2 AND name = $3 AND apiversion = $1 AND generation = $15 AND ($13 = '' OR lineage = $13) AND ` + keyGuard(16) + `
RETURNING generation, lineage, created_at`
)

// Put stores rec if rec.Generation equals the stored generation (0: the
// record must not exist) and, when rec.Lineage is set, rec.Lineage equals
// the stored lineage (so a copy read before the record was deleted and
// recreated is stale too), as one conditional INSERT or UPDATE; otherwise
// it returns a *state.GenerationError and changes nothing. Secrets are
// sealed with the store's data key (created, from the passphrase, by the
// first Put that has secrets).
func (s *Store) Put(ctx context.Context, rec *state.Record) (*state.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if rec == nil {
		return nil, errcode.New(errcode.Invalid, "postgres: Put of a nil record")
	}
	id := rec.ID()
	if err := id.Validate(); err != nil {
		return nil, err
	}
	var (
		sealed *seal.Sealed
		check  string
	)
	if len(rec.Secrets) > 0 {
		ring, kc, err := s.keys.get(ctx, true)
		if err != nil {
			return nil, err
		}
		if sealed, err = ring.Seal(id, rec.Secrets); err != nil {
			return nil, err
		}
		check = kc
	}
	c, err := encode(rec, sealed, check)
	if err != nil {
		return nil, fmt.Errorf("%w (record %s)", err, id.Short())
	}
	out := rec.Clone()
	if out.Spec, err = decodeMap(c.spec, "spec"); err != nil { // normalised, as Get returns it
		return nil, errcode.Wrap(errcode.Internal, "postgres: "+id.Short(), err)
	}
	if out.Status, err = decodeMap(c.status, "status"); err != nil {
		return nil, errcode.Wrap(errcode.Internal, "postgres: "+id.Short(), err)
	}
	if len(out.Children) == 0 {
		out.Children = nil
	}
	// timestamptz keeps microseconds.
	now := time.Now().UTC().Truncate(time.Microsecond)
	out.UpdatedAt = now

	if rec.Generation == 0 {
		if out.Lineage == "" {
			out.Lineage = state.NewID()
		}
		if out.CreatedAt.IsZero() {
			out.CreatedAt = now
		}
		out.CreatedAt = out.CreatedAt.UTC().Truncate(time.Microsecond)
		out.Generation = 1
		// A conflicting row that is deleted before putFailed reads it
		// leaves nothing to report: try again (a few times).
		for range 3 {
			tag, err := s.pool.Exec(ctx, insertSQL, id.APIVersion, id.Kind, id.Name, state.GroupKey(id.Group()), c.labels, c.spec, rec.SpecHash, c.status,
				c.owner, c.children, c.ciphertext, c.mac, out.Lineage, out.CreatedAt, now, c.keyCheck)
			if err != nil {
				return nil, s.dbErr("writing "+id.Short(), err)
			}
			if tag.RowsAffected() == 1 {
				return out, nil
			}
			if err := s.putFailed(ctx, id, 0, "", c.keyCheck); err != nil {
				return nil, err
			}
		}
		return nil, &state.GenerationError{ID: id, Expected: 0, Actual: 0}
	}

	err = s.pool.QueryRow(ctx, updateSQL, id.APIVersion, id.Kind, id.Name, state.GroupKey(id.Group()), c.labels, c.spec, rec.SpecHash, c.status,
		c.owner, c.children, c.ciphertext, c.mac, rec.Lineage, now, rec.Generation, c.keyCheck).
		Scan(&out.Generation, &out.Lineage, &out.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		if err := s.putFailed(ctx, id, rec.Generation, rec.Lineage, c.keyCheck); err != nil {
			return nil, err
		}
		// Deleted and recreated up to the same generation in between.
		return nil, &state.GenerationError{ID: id, Expected: rec.Generation, Actual: rec.Generation}
	}
	if err != nil {
		return nil, s.dbErr("writing "+id.Short(), err)
	}
	out.CreatedAt = out.CreatedAt.UTC()
	return out, nil
}

// putFailed explains a Put that changed no row: the stored generation
// differs, or the stored lineage differs from lineage ("": not checked) —
// the record was deleted and recreated — (a *state.GenerationError, in the
// second case wrapped in a message saying so), or the data key was
// replaced since the secrets were sealed. It returns nil if none is the
// case (the row changed in between; the caller decides).
func (s *Store) putFailed(ctx context.Context, id manifest.ID, expected int64, lineage, keyCheck string) error {
	var (
		cur                    int64
		apiVersion, curLineage string
	)
	err := s.pool.QueryRow(ctx, "SELECT generation, apiversion, lineage FROM openctl_records WHERE provider = $1 AND kind = $2 AND name = $3",
		state.GroupKey(id.Group()), id.Kind, id.Name).Scan(&cur, &apiVersion, &curLineage)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return s.dbErr("reading "+id.Short(), err)
	}
	if apiVersion != "" && apiVersion != id.APIVersion {
		return errcode.New(errcode.Conflict, fmt.Sprintf("postgres: %s is stored as %s/%s/%s; one resource cannot be kept at two apiVersions", id, apiVersion, id.Kind, id.Name))
	}
	if cur != 0 && lineage != "" && curLineage != lineage {
		return fmt.Errorf("postgres: %s was deleted and recreated since it was read (lineage %s, now %s): %w",
			id.Short(), lineage, curLineage, &state.GenerationError{ID: id, Expected: expected, Actual: cur, Recreated: true})
	}
	if cur != expected {
		return &state.GenerationError{ID: id, Expected: expected, Actual: cur}
	}
	if keyCheck != "" {
		kf, err := s.Key(ctx)
		if err != nil && !errors.Is(err, errcode.NotFound) {
			return err
		}
		if kf == nil || kf.Check != keyCheck {
			return errcode.New(errcode.Conflict, fmt.Sprintf("postgres: writing %s: the state key in %s was replaced while its secrets were being sealed; retry", id.Short(), s.where))
		}
	}
	return nil
}
