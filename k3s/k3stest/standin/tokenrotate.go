package standin

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/openctl/openctl/internal/k3semu"
)

// clusterPasswdKey is the etcd key holding the cluster's passwd file (the
// server and node passwords). k3s keeps its bootstrap data in the
// datastore, encrypted with the server token; the stand-in keeps only
// this part there, in the clear, so that a token rotation reaches every
// server: each one's supervisor watches the key.
const clusterPasswdKey = "/k3s-standin/bootstrap/passwd"

// reconcilePasswd runs once etcd is up: the first server of a cluster
// stores its passwd file in etcd; a later start (or a joiner) adopts the
// cluster's (AdoptClusterPasswd).
func reconcilePasswd(ctx context.Context, kv *clientv3.Client, serverDir, token string, caPEM []byte) error {
	f := osFS
	local, err := f.ReadFile(filepath.Join(serverDir, "cred", "passwd"))
	if err != nil {
		return fmt.Errorf("standin: passwd: %w", err)
	}
	resp, err := kv.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(clusterPasswdKey), "=", 0)).Then(clientv3.OpPut(clusterPasswdKey, string(local))).Else(clientv3.OpGet(clusterPasswdKey)).Commit()
	if err != nil {
		return fmt.Errorf("standin: cluster passwd: %w", err)
	}
	if resp.Succeeded {
		return nil
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 {
		return errors.New("standin: cluster passwd: key vanished")
	}
	return k3semu.AdoptClusterPasswd(f, serverDir, token, caPEM, local, kvs[0].Value)
}

// watchPasswd applies every change of the cluster's passwd (a token
// rotation through any server) until ctx ends.
func watchPasswd(ctx context.Context, kv *clientv3.Client, sup *k3semu.Supervisor) {
	for wr := range kv.Watch(ctx, clusterPasswdKey) {
		for _, ev := range wr.Events {
			if ev.Type == clientv3.EventTypePut {
				sup.SyncPasswd(ev.Kv.Value)
			}
		}
	}
}
