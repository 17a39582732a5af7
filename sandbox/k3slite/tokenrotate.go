package k3slite

import (
	"fmt"
	"path"

	"github.com/openctl/openctl/internal/k3semu"
)

// reconcilePasswd runs once the member runs: the first server of a
// cluster stores its passwd in the datastore; a later start (or a joiner)
// adopts the cluster's (AdoptClusterPasswd).
func (n *Network) reconcilePasswd(f hostFS, c *cluster, serverDir, token string, caPEM []byte) error {
	local, err := f.ReadFile(path.Join(serverDir, "cred", "passwd"))
	if err != nil {
		return fmt.Errorf("standin: passwd: %w", err)
	}
	clusterPW := n.clusterPasswd(c)
	if len(clusterPW) == 0 {
		n.setClusterPasswd(c, local)
		return nil
	}
	return k3semu.AdoptClusterPasswd(f, serverDir, token, caPEM, local, clusterPW)
}
