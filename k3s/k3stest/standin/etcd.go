package standin

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// startEtcd starts this server's embedded etcd member in
// server/db/etcd, named <node>-<8 hex> as k3s names members (the name is
// kept in server/db/etcd/name so restarts reuse it), and waits until it
// serves.
func startEtcd(ctx context.Context, cfg ServerConfig, serverDir string, nodeIP net.IP, log *slog.Logger) (*embed.Etcd, error) {
	dir := filepath.Join(serverDir, "db", "etcd")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("standin: etcd: %w", err)
	}
	name, err := memberName(dir, cfg.NodeName)
	if err != nil {
		return nil, err
	}
	ec := embed.NewConfig()
	ec.Name = name
	ec.Dir = filepath.Join(dir, "data")
	ec.Logger = "zap"
	ec.LogLevel = "warn"
	ec.LogOutputs = []string{"stderr"}
	clientHost := "127.0.0.1"
	ec.ListenClientUrls = []url.URL{{Scheme: "http", Host: net.JoinHostPort(clientHost, strconv.Itoa(cfg.EtcdClientPort))}}
	ec.AdvertiseClientUrls = ec.ListenClientUrls
	peer := url.URL{Scheme: "http", Host: net.JoinHostPort(nodeIP.String(), strconv.Itoa(cfg.EtcdPeerPort))}
	ec.ListenPeerUrls = []url.URL{peer}
	ec.AdvertisePeerUrls = []url.URL{peer}
	ec.InitialCluster = ec.InitialClusterFromName(name)
	ec.InitialClusterToken = "etcd-cluster"
	ec.ClusterState = embed.ClusterStateFlagNew
	log.Info("Starting etcd", "name", name, "data-dir", ec.Dir)
	e, err := embed.StartEtcd(ec)
	if err != nil {
		return nil, fmt.Errorf("standin: etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
		return e, nil
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("standin: etcd: %w", err)
	case <-time.After(60 * time.Second):
		e.Close()
		return nil, errors.New("standin: etcd did not become ready within 60s")
	case <-ctx.Done():
		e.Close()
		return nil, ctx.Err()
	}
}

func memberName(dir, node string) (string, error) {
	p := filepath.Join(dir, "name")
	if b, err := os.ReadFile(p); err == nil {
		return strings.TrimSpace(string(b)), nil
	}
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("standin: etcd name: %w", err)
	}
	name := node + "-" + hex.EncodeToString(b)
	return name, writeFile(p, []byte(name+"\n"), 0o600)
}
