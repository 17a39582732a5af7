package secret_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/openctl/openctl/secret"
)

const value = "hunter2-join-token"

func TestSecretRedactsEverywhere(t *testing.T) {
	s := secret.New(value)
	type holder struct {
		Token secret.Secret `json:"token" yaml:"token"`
		Map   map[string]secret.Secret
	}
	h := holder{Token: s, Map: map[string]secret.Secret{"k": s}}

	var outputs []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%10s", "%d"} {
		outputs = append(outputs, fmt.Sprintf(verb, s), fmt.Sprintf(verb, h))
	}
	outputs = append(outputs, fmt.Sprint(s), fmt.Sprintln(h), s.String())
	j, err := json.Marshal(h)
	require.NoError(t, err)
	outputs = append(outputs, string(j))
	y, err := yaml.Marshal(h)
	require.NoError(t, err)
	outputs = append(outputs, string(y))
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("msg", "token", s, "holder", h)
	slog.New(slog.NewTextHandler(&logs, nil)).Info("msg", "token", s)
	outputs = append(outputs, logs.String())

	for _, out := range outputs {
		assert.NotContains(t, out, value)
		assert.NotContains(t, out, fmt.Sprintf("%x", value))
	}
	assert.Contains(t, string(j), `"token":"[redacted]"`)
	assert.Contains(t, string(y), "token: '[redacted]'")
	assert.Contains(t, logs.String(), `"token":"[redacted]"`)
}

func TestSecretReveal(t *testing.T) {
	s := secret.New(value)
	assert.Equal(t, value, s.Reveal())
	assert.True(t, s.Equal(secret.New(value)))
	assert.False(t, s.IsZero())
	assert.True(t, secret.Secret{}.IsZero())
	assert.Equal(t, "[redacted]", secret.Secret{}.String())
}

func ExampleSecret() {
	token := secret.New("s3cr3t")
	fmt.Printf("token=%v %s %q\n", token, token, token)
	fmt.Println(len(token.Reveal()))
	// Output:
	// token=[redacted] [redacted] [redacted]
	// 6
}

func TestSecretUnmarshal(t *testing.T) {
	var cfg struct {
		Token secret.Secret `json:"token" yaml:"token"`
	}
	require.NoError(t, json.Unmarshal([]byte(`{"token":"abc"}`), &cfg))
	assert.Equal(t, "abc", cfg.Token.Reveal())
	require.NoError(t, yaml.Unmarshal([]byte("token: xyz\n"), &cfg))
	assert.Equal(t, "xyz", cfg.Token.Reveal())
	// Feeding redacted output back is refused rather than storing "[redacted]".
	assert.ErrorContains(t, json.Unmarshal([]byte(`{"token":"[redacted]"}`), &cfg), "redaction placeholder")
	assert.ErrorContains(t, yaml.Unmarshal([]byte("token: '[redacted]'\n"), &cfg), "redaction placeholder")
	assert.Error(t, json.Unmarshal([]byte(`{"token":1}`), &cfg))
}
