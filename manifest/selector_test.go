package manifest_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
)

func TestSelector(t *testing.T) {
	labels := map[string]string{"app": "web", "tier": "frontend"}
	for sel, want := range map[string]bool{
		"":                          true,
		"app=web":                   true,
		"app==web":                  true,
		"app=db":                    false,
		"app!=db":                   true,
		"tier!=frontend":            false,
		"app":                       true,
		"env":                       false,
		"!env":                      true,
		"!app":                      false,
		"app=web, tier!=db,!legacy": true,
		"app=web,env":               false,
	} {
		s, err := manifest.ParseSelector(sel)
		require.NoError(t, err, sel)
		assert.Equal(t, want, s.Matches(labels), sel)
	}
	for _, bad := range []string{"=x", "a b", "!", "a=b=c", "app=web,,x", "a!=b c"} {
		_, err := manifest.ParseSelector(bad)
		require.Error(t, err, bad)
		assert.True(t, errcode.Is(err, errcode.Invalid), bad)
	}
}

func FuzzParseSelector(f *testing.F) {
	for _, s := range []string{"app=web,tier!=db,env,!legacy", "a==b", "", "!", "=,="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sel, err := manifest.ParseSelector(s)
		if err != nil {
			return
		}
		for _, r := range sel {
			require.NotEmpty(t, r.Key)
			require.Contains(t, []string{"=", "!=", "exists", "!exists"}, r.Op)
		}
		_ = sel.Matches(map[string]string{"a": "b"})
	})
}
