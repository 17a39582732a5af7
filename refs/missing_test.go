package refs_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/refs"
)

// TestMissingTargetOrField: a target that does not exist matches
// ErrTargetNotFound only; a target without the field ErrFieldNotFound
// only; a Getter's other errors neither.
func TestMissingTargetOrField(t *testing.T) {
	db := manifest.ID{APIVersion: "test.openctl.io/v1", Kind: "Thing", Name: "db"}
	getter := func(err error) refs.Getter {
		return refs.GetterFunc(func(ctx context.Context, id manifest.ID) (*manifest.Resource, error) {
			if err != nil {
				return nil, err
			}
			return &manifest.Resource{APIVersion: id.APIVersion, Kind: id.Kind, Metadata: manifest.Metadata{Name: id.Name}, Status: map[string]any{"ip": "10.0.0.1"}}, nil
		})
	}
	web := func(field string) *manifest.Resource {
		return &manifest.Resource{APIVersion: db.APIVersion, Kind: "Thing", Metadata: manifest.Metadata{Name: "web"}, Spec: map[string]any{"ip": refs.Marker(db, field)}}
	}
	for _, tc := range []struct {
		name                 string
		g                    refs.Getter
		field                string
		target, fieldMissing bool
		code                 errcode.Code
	}{
		{"no target", getter(fmt.Errorf("fake: %w", errcode.NotFound)), "status.ip", true, false, errcode.NotFound},
		{"no field", getter(nil), "status.address", false, true, errcode.NotFound},
		{"getter fails", getter(errcode.New(errcode.Unauthorized, "fake: denied")), "status.ip", false, false, errcode.Unauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := refs.Resolve(t.Context(), tc.g, web(tc.field))
			require.Error(t, err)
			assert.Equal(t, tc.target, errors.Is(err, refs.ErrTargetNotFound))
			assert.Equal(t, tc.fieldMissing, errors.Is(err, refs.ErrFieldNotFound))
			assert.Equal(t, tc.code, errcode.Of(err))
		})
	}

	e := refs.TargetNotFound(web("").ID(), refs.Ref{Path: "spec.ip", Target: db, Field: "status.ip"}, "not in the call")
	assert.ErrorIs(t, e, refs.ErrTargetNotFound)
	assert.ErrorIs(t, e, errcode.NotFound)
	assert.Equal(t, "refs: Thing/web spec.ip: $ref to Thing/db field status.ip: the referenced resource does not exist: not in the call", e.Error())
}
