//go:build !unix

package testenv

import "testing"

func isRoot() bool { return false }

func runAsNobody(t *testing.T) { t.Fatal("testenv: running as another user is not supported here") }
