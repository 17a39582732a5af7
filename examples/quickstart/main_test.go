package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestQuickstart(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(t.Context(), &out))
	s := out.String()
	assert.Contains(t, s, "wave 1: Service/db")
	assert.Contains(t, s, "wave 2: Service/api, Service/worker")
	assert.Contains(t, s, "wave 3: LoadBalancer/edge")
	assert.Contains(t, s, "edge backends (resolved from $refs): [api.demo.internal worker.demo.internal]")
	assert.Contains(t, s, "second apply: 4 unchanged")
	// The load balancer is deleted before the services it refers to.
	del := s[strings.Index(s, "delete:"):]
	assert.Less(t, strings.Index(del, "succeeded LoadBalancer/edge"), strings.Index(del, "succeeded Service/api"))
	assert.Less(t, strings.Index(del, "succeeded Service/api"), strings.Index(del, "succeeded Service/db"))
}
