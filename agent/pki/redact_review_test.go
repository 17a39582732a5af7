package pki_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/openctl/openctl/agent/pki"
)

// A CA or a leaf marshalled to JSON or YAML (a state file, a debug dump)
// does not carry its private key: STYLE's "secrets redact themselves in
// String(), %v, JSON and YAML output".
func TestReviewKeysNeverMarshalled(t *testing.T) {
	ca, err := pki.NewCA("redact CA")
	require.NoError(t, err)
	leaf, err := ca.IssueClient(pki.ControllerName)
	require.NoError(t, err)
	for name, v := range map[string]any{"CA": ca, "*CA": &ca, "Leaf": leaf, "CA value": *ca, "Leaf value": *leaf} {
		d := ca.Key.D.String()
		if strings.HasPrefix(name, "Leaf") {
			d = leaf.Key.D.String()
		}
		j, err := json.Marshal(v)
		require.NoError(t, err, name)
		assert.False(t, strings.Contains(string(j), d), "%s: JSON carries the private scalar", name)
		assert.Contains(t, string(j), "redacted", name)
		y, err := yaml.Marshal(v)
		require.NoError(t, err, name)
		assert.False(t, strings.Contains(string(y), d), "%s: YAML carries the private scalar", name)
		assert.False(t, strings.Contains(fmt.Sprintf("%v %+v %#v", v, v, v), d), name)
	}
}
