package k3semu

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/client-go/kubernetes"
)

// TokenOptions are the flags of `k3s token <command>` (k3s
// pkg/cli/cmds/token.go, the ones the twins implement).
type TokenOptions struct {
	DataDir     string        // --data-dir, -d; default /var/lib/rancher/k3s
	Kubeconfig  string        // --kubeconfig, $KUBECONFIG; default DefaultKubeconfig
	Description string        // create: --description
	TTL         time.Duration // create: --ttl; default 24h, 0 never expires
	Server      string        // rotate: --server, -s, K3S_URL; default https://127.0.0.1:6443
	Token       string        // rotate: --token, -t, K3S_TOKEN; default the server/token file
	NewToken    string        // rotate: --new-token
	Args        []string      // positional arguments
}

// ParseTokenArgs parses the flags of `k3s token <sub>`; lookupEnv is
// os.LookupEnv in the binary.
func ParseTokenArgs(sub string, args []string, lookupEnv func(string) (string, bool)) (TokenOptions, error) {
	var o TokenOptions
	fs := pflag.NewFlagSet("token "+sub, pflag.ContinueOnError)
	fs.SetOutput(discard{})
	fs.StringVarP(&o.DataDir, "data-dir", "d", "/var/lib/rancher/k3s", "")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "")
	switch sub {
	case "create":
		fs.StringVar(&o.Description, "description", "", "")
		fs.DurationVar(&o.TTL, "ttl", 24*time.Hour, "")
	case "rotate":
		fs.StringVarP(&o.Server, "server", "s", "https://127.0.0.1:6443", "")
		fs.StringVarP(&o.Token, "token", "t", "", "")
		fs.StringVar(&o.NewToken, "new-token", "", "")
	case "list", "delete", "generate":
	default:
		return o, fmt.Errorf("k3s token: unknown command %q", sub)
	}
	if err := fs.Parse(args); err != nil {
		return o, fmt.Errorf("k3s token %s: %w", sub, err)
	}
	o.Args = fs.Args()
	if v, ok := lookupEnv("KUBECONFIG"); ok && v != "" && o.Kubeconfig == "" {
		o.Kubeconfig = v
	}
	if o.Kubeconfig == "" {
		o.Kubeconfig = DefaultKubeconfig
	}
	if v, ok := lookupEnv("K3S_DATA_DIR"); ok && v != "" && !fs.Changed("data-dir") {
		o.DataDir = v
	}
	if sub == "rotate" {
		if v, ok := lookupEnv("K3S_URL"); ok && v != "" && !fs.Changed("server") {
			o.Server = v
		}
		if v, ok := lookupEnv("K3S_TOKEN"); ok && v != "" && !fs.Changed("token") {
			o.Token = v
		}
	}
	return o, nil
}

// TokenEnv is what `k3s token` needs from the twin it runs in.
type TokenEnv struct {
	// FS is the host's file system (rotate reads server/token from it).
	FS FS
	// AdminClient is a client from a kubeconfig file and the CA it trusts.
	AdminClient func(kubeconfig string) (kubernetes.Interface, []byte, error)
	// ServerURL maps rotate's --server to the URL to dial; nil keeps it.
	ServerURL func(string) string
}

// TokenCmd is `k3s token <command>`: it logs to stderr and returns the
// exit status.
func TokenCmd(ctx context.Context, env TokenEnv, args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) int {
	log := NewLogger(stderr)
	if len(args) < 1 {
		Fatal(log, "k3s token: missing command (create, list, delete, generate, rotate)")
		return 1
	}
	o, err := ParseTokenArgs(args[0], args[1:], lookupEnv)
	if err == nil {
		err = RunToken(ctx, env, args[0], o, stdout)
	}
	if err != nil {
		Fatal(log, err.Error())
		return 1
	}
	return 0
}

// RunToken runs `k3s token create|list|delete|generate|rotate`, writing
// what k3s prints to stdout.
func RunToken(ctx context.Context, env TokenEnv, sub string, o TokenOptions, stdout io.Writer) error {
	switch sub {
	case "generate":
		fmt.Fprintln(stdout, GenerateBootstrapToken())
		return nil
	case "rotate":
		if env.ServerURL != nil {
			o.Server = env.ServerURL(o.Server)
		}
		return rotateTokenCommand(ctx, env.FS, o, stdout)
	}
	client, caPEM, err := env.AdminClient(o.Kubeconfig)
	if err != nil {
		return err
	}
	switch sub {
	case "create":
		return createBootstrapToken(ctx, client, caPEM, o, stdout)
	case "list":
		return listBootstrapTokens(ctx, client, stdout)
	case "delete":
		return deleteBootstrapTokens(ctx, client, o.Args, stdout)
	}
	return fmt.Errorf("k3s token: unknown command %q", sub)
}

// createBootstrapToken stores a bootstrap token (the argument, or a new
// random one) and prints it as K10<hash of the CA>::<id>.<secret>.
func createBootstrapToken(ctx context.Context, client kubernetes.Interface, caPEM []byte, o TokenOptions, stdout io.Writer) error {
	tok := ""
	if len(o.Args) > 0 {
		tok = o.Args[0]
	} else {
		tok = GenerateBootstrapToken()
	}
	sec, err := BootstrapTokenSecret(tok, o.Description, o.TTL, time.Now())
	if err != nil {
		return err
	}
	secrets := client.CoreV1().Secrets(metav1.NamespaceSystem)
	if _, err := secrets.Get(ctx, sec.Name, metav1.GetOptions{}); err == nil {
		return fmt.Errorf("a token with id %q already exists", string(sec.Data["token-id"]))
	}
	if _, err := secrets.Create(ctx, sec, metav1.CreateOptions{}); err != nil {
		return err
	}
	sum := sha256.Sum256(caPEM)
	fmt.Fprintln(stdout, "K10"+hex.EncodeToString(sum[:])+"::"+tok)
	return nil
}

// listBootstrapTokens prints k3s's table of bootstrap tokens.
func listBootstrapTokens(ctx context.Context, client kubernetes.Interface, stdout io.Writer) error {
	list, err := client.CoreV1().Secrets(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("failed to list bootstrap tokens: %w", err)
	}
	w := tabwriter.NewWriter(stdout, 10, 4, 3, ' ', 0)
	defer w.Flush()
	const format = "%s\t%s\t%s\t%s\t%s\t%s\n"
	fmt.Fprintf(w, format, "TOKEN", "TTL", "EXPIRES", "USAGES", "DESCRIPTION", "EXTRA GROUPS")
	for _, s := range list.Items {
		if s.Type != bootstrapTokenType {
			continue
		}
		ttl, expires := "<forever>", "<never>"
		if exp := string(s.Data["expiration"]); exp != "" {
			if t, err := time.Parse(time.RFC3339, exp); err == nil {
				ttl, expires = duration.ShortHumanDuration(time.Until(t)), t.Format(time.RFC3339)
			}
		}
		var usages []string
		for k, v := range s.Data {
			if u, ok := strings.CutPrefix(k, "usage-bootstrap-"); ok && string(v) == "true" {
				usages = append(usages, u)
			}
		}
		slices.Sort(usages)
		fmt.Fprintf(w, format, s.Data["token-id"], ttl, expires, orNone(strings.Join(usages, ",")),
			orNone(string(s.Data["description"])), orNone(string(s.Data["auth-extra-groups"])))
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// deleteBootstrapTokens deletes the tokens given by id or as id.secret.
func deleteBootstrapTokens(ctx context.Context, client kubernetes.Interface, ids []string, stdout io.Writer) error {
	if len(ids) == 0 {
		return errors.New("missing argument; 'token delete' is missing token")
	}
	for _, id := range ids {
		if !bootstrapTokenIDRE.MatchString(id) {
			m := bootstrapTokenRE.FindStringSubmatch(id)
			if len(m) != 3 {
				return fmt.Errorf("given token didn't match pattern %q or %q", "\\A([a-z0-9]{6})\\z", "\\A([a-z0-9]{6})\\.([a-z0-9]{16})\\z")
			}
			id = m[1]
		}
		err := client.CoreV1().Secrets(metav1.NamespaceSystem).Delete(ctx, "bootstrap-token-"+id, metav1.DeleteOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) {
				return fmt.Errorf("failed to delete bootstrap token %q: %w", id, err)
			}
			return err
		}
		fmt.Fprintf(stdout, "bootstrap token %q deleted\n", id)
	}
	return nil
}

// rotateTokenCommand asks the server (as the server user, with --token or
// the server/token file) to replace the server token, as `k3s token
// rotate` does, and prints k3s's lines.
func rotateTokenCommand(ctx context.Context, f FS, o TokenOptions, stdout io.Writer) error {
	fmt.Fprintln(stdout, "\033[33mWARNING\033[0m: Recommended to keep a record of the old token. If restoring from a snapshot, you must use the token associated with that snapshot.")
	token := o.Token
	if token == "" {
		b, err := f.ReadFile(path.Join(o.DataDir, "server", "token"))
		if err != nil {
			return err
		}
		token = string(bytes.TrimRight(b, "\n"))
	}
	sc, err := ValidateServer(ctx, o.Server, token, "server", func(string) {})
	if err != nil {
		return err
	}
	body, err := json.Marshal(tokenRotateRequest{NewToken: &o.NewToken})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, sc.url+"/v1-k3s/token", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.SetBasicAuth(sc.user, sc.pw)
	resp, err := sc.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s/v1-k3s/token: %s: %s", sc.url, resp.Status, strings.TrimSpace(string(msg)))
	}
	fmt.Fprintln(stdout, "Token rotated, restart k3s nodes with new token")
	return nil
}

// bootstrapTokenType is the Secret type of bootstrap tokens.
const bootstrapTokenType = corev1.SecretType("bootstrap.kubernetes.io/token")

var bootstrapTokenIDRE = regexp.MustCompile(`^[a-z0-9]{6}$`)

// GenerateBootstrapToken makes a random <6>.<16> token of [a-z0-9].
func GenerateBootstrapToken() string {
	const chars = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 22)
	rand.Read(b)
	for i := range b {
		b[i] = chars[int(b[i])%len(chars)]
	}
	return string(b[:6]) + "." + string(b[6:])
}

// BootstrapTokenSecret is the kubeadm-style Secret k3s stores a bootstrap
// token in: kube-system/bootstrap-token-<id>. A zero ttl never expires.
func BootstrapTokenSecret(token, description string, ttl time.Duration, now time.Time) (*corev1.Secret, error) {
	m := bootstrapTokenRE.FindStringSubmatch(token)
	if len(m) != 3 {
		return nil, fmt.Errorf("the bootstrap token %q was not of the form %q", token, "\\A([a-z0-9]{6})\\.([a-z0-9]{16})\\z")
	}
	data := map[string][]byte{
		"token-id":                       []byte(m[1]),
		"token-secret":                   []byte(m[2]),
		"usage-bootstrap-signing":        []byte("true"),
		"usage-bootstrap-authentication": []byte("true"),
		"auth-extra-groups":              []byte(NodeBootstrapTokenAuthGroup),
	}
	if description != "" {
		data["description"] = []byte(description)
	}
	if ttl > 0 {
		data["expiration"] = []byte(now.Add(ttl).UTC().Format(time.RFC3339))
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-" + m[1], Namespace: metav1.NamespaceSystem},
		Type:       bootstrapTokenType,
		Data:       data,
	}, nil
}
