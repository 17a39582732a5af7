package k3stest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSmoke(t *testing.T) {
	n := NewNetwork(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	h, err := n.AddHost(ctx, "h1", HostOptions{})
	require.NoError(t, err)
	out, err := h.Run(ctx, "sh", "-c", "hostname; id; ls /run; ps ax; systemctl is-active foo; cat /etc/hostname")
	t.Logf("%s %v", out, err)
	c, err := h.Dial(ctx, h.ClientConfig(DefaultUser))
	require.NoError(t, err)
	s, err := c.NewSession()
	require.NoError(t, err)
	out, err = s.CombinedOutput("sudo -n true && echo sudo-ok; hostname")
	t.Logf("%s %v", out, err)
}
