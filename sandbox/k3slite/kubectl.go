package k3slite

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"path"
	"slices"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/jsonpath"
	"sigs.k8s.io/yaml"

	"github.com/openctl/openctl/internal/k3semu"
	"github.com/openctl/openctl/sandbox/vmhost"
)

// kubectlUnsupported is printed for every kubectl command line outside
// the subset.
const kubectlUnsupported = `error: the k3s sandbox's kubectl only implements "get node[s] [NAME] [-o jsonpath=…|name|json|yaml|wide]" and "get --raw PATH" (with --kubeconfig, --request-timeout)`

// runKubectl runs the subset of kubectl that openctl's scripts use,
// through client-go, with kubectl's output and error messages. As in
// k3s, without $KUBECONFIG or --kubeconfig it uses /etc/rancher/k3s/k3s.yaml
// when that file exists.
func (n *Network) runKubectl(ctx context.Context, c *vmhost.Call, args []string, lookupEnv func(string) (string, bool)) int {
	f := callFS(c)
	fs := pflag.NewFlagSet("kubectl", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	kubeconfig := fs.String("kubeconfig", "", "")
	timeout := fs.String("request-timeout", "0", "")
	output := fs.StringP("output", "o", "", "")
	raw := fs.String("raw", "", "")
	fs.StringP("namespace", "n", "", "")
	if err := fs.Parse(args); err != nil {
		fmt.Fprintf(c.Stderr, "error: %v\nSee 'kubectl --help' for usage.\n", err)
		return 1
	}
	rest := fs.Args()
	if len(rest) == 0 || rest[0] != "get" {
		fmt.Fprintln(c.Stderr, kubectlUnsupported)
		return 1
	}
	rest = rest[1:]
	var d time.Duration
	if *timeout != "0" {
		var err error
		if d, err = time.ParseDuration(*timeout); err != nil {
			if d, err = time.ParseDuration(*timeout + "s"); err != nil {
				fmt.Fprintf(c.Stderr, "error: invalid argument %q for \"--request-timeout\" flag: %v\n", *timeout, err)
				return 1
			}
		}
	}
	cfg, server, err := n.kubectlConfig(f, *kubeconfig, lookupEnv)
	if err != nil {
		fmt.Fprintf(c.Stderr, "error: %v\n", err)
		return 1
	}
	cfg.Timeout = d
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		fmt.Fprintf(c.Stderr, "error: %v\n", err)
		return 1
	}
	if *raw != "" {
		if len(rest) > 0 {
			fmt.Fprintln(c.Stderr, "error: arguments may not be passed when --raw is specified")
			return 1
		}
		body, err := client.Discovery().RESTClient().Get().AbsPath(*raw).DoRaw(ctx)
		if err != nil {
			return kubectlError(c, server, err)
		}
		c.Stdout.Write(body)
		return 0
	}
	if len(rest) == 0 {
		fmt.Fprintln(c.Stderr, kubectlUnsupported)
		return 1
	}
	kind, name, _ := strings.Cut(rest[0], "/")
	if !slices.Contains([]string{"node", "nodes", "no"}, kind) || len(rest) > 2 || (name != "" && len(rest) > 1) {
		fmt.Fprintln(c.Stderr, kubectlUnsupported)
		return 1
	}
	if len(rest) == 2 {
		name = rest[1]
	}
	var obj any
	var nodes []corev1.Node
	if name != "" {
		node, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return kubectlError(c, server, err)
		}
		node.Kind, node.APIVersion = "Node", "v1"
		obj, nodes = node, []corev1.Node{*node}
	} else {
		list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return kubectlError(c, server, err)
		}
		items := make([]any, 0, len(list.Items))
		for i := range list.Items {
			list.Items[i].Kind, list.Items[i].APIVersion = "Node", "v1"
			items = append(items, &list.Items[i])
		}
		obj = map[string]any{"apiVersion": "v1", "kind": "List", "items": items, "metadata": map[string]any{"resourceVersion": ""}}
		nodes = list.Items
		if len(nodes) == 0 && (*output == "" || *output == "wide") {
			fmt.Fprintln(c.Stderr, "No resources found")
			return 0
		}
	}
	switch o := *output; {
	case strings.HasPrefix(o, "jsonpath="):
		return printJSONPath(c, obj, strings.TrimPrefix(o, "jsonpath="))
	case o == "name":
		for _, n := range nodes {
			fmt.Fprintf(c.Stdout, "node/%s\n", n.Name)
		}
	case o == "json":
		b, _ := json.MarshalIndent(obj, "", "    ")
		fmt.Fprintf(c.Stdout, "%s\n", b)
	case o == "yaml":
		b, _ := json.Marshal(obj)
		y, _ := yaml.JSONToYAML(b)
		c.Stdout.Write(y)
	case o == "" || o == "wide":
		printNodeTable(c.Stdout, nodes, o == "wide")
	default:
		fmt.Fprintf(c.Stderr, "error: unable to match a printer suitable for the output format %q, allowed formats are: json,jsonpath,name,wide,yaml\n", o)
		return 1
	}
	return 0
}

// printJSONPath prints obj through a kubectl jsonpath template.
func printJSONPath(c *vmhost.Call, obj any, tmpl string) int {
	b, err := json.Marshal(obj)
	if err != nil {
		fmt.Fprintf(c.Stderr, "error: %v\n", err)
		return 1
	}
	var data any
	if err := json.Unmarshal(b, &data); err != nil {
		fmt.Fprintf(c.Stderr, "error: %v\n", err)
		return 1
	}
	jp := jsonpath.New("out").AllowMissingKeys(true)
	if err := jp.Parse(tmpl); err != nil {
		fmt.Fprintf(c.Stderr, "error: error parsing jsonpath %s, %v\n", tmpl, err)
		return 1
	}
	var out bytes.Buffer
	if err := jp.Execute(&out, data); err != nil {
		fmt.Fprintf(c.Stderr, "error: error executing jsonpath %q: %v. Printing more information for debugging the template:\n", tmpl, err)
		return 1
	}
	c.Stdout.Write(out.Bytes())
	return 0
}

// printNodeTable prints kubectl's node table.
func printNodeTable(w io.Writer, nodes []corev1.Node, wide bool) {
	tw := tabwriter.NewWriter(w, 6, 4, 3, ' ', 0)
	if wide {
		fmt.Fprintln(tw, "NAME\tSTATUS\tROLES\tAGE\tVERSION\tINTERNAL-IP\tEXTERNAL-IP\tOS-IMAGE\tKERNEL-VERSION\tCONTAINER-RUNTIME")
	} else {
		fmt.Fprintln(tw, "NAME\tSTATUS\tROLES\tAGE\tVERSION")
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	for _, n := range nodes {
		status := "Unknown"
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				if cond.Status == corev1.ConditionTrue {
					status = "Ready"
				} else {
					status = "NotReady"
				}
			}
		}
		if n.Spec.Unschedulable {
			status += ",SchedulingDisabled"
		}
		var roles []string
		for k := range n.Labels {
			if r, ok := strings.CutPrefix(k, "node-role.kubernetes.io/"); ok && r != "" {
				roles = append(roles, r)
			}
		}
		sort.Strings(roles)
		role := strings.Join(roles, ",")
		if role == "" {
			role = "<none>"
		}
		age := "<unknown>"
		if !n.CreationTimestamp.IsZero() {
			age = duration.HumanDuration(time.Since(n.CreationTimestamp.Time))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s", n.Name, status, role, age, n.Status.NodeInfo.KubeletVersion)
		if wide {
			internal, external := "<none>", "<none>"
			for _, a := range n.Status.Addresses {
				switch a.Type {
				case corev1.NodeInternalIP:
					internal = a.Address
				case corev1.NodeExternalIP:
					external = a.Address
				}
			}
			fmt.Fprintf(tw, "\t%s\t%s\t%s\t%s\t%s", internal, external, n.Status.NodeInfo.OSImage, n.Status.NodeInfo.KernelVersion, n.Status.NodeInfo.ContainerRuntimeVersion)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
}

// kubectlError prints err as kubectl does and returns its exit status.
func kubectlError(c *vmhost.Call, server string, err error) int {
	var se apierrors.APIStatus
	switch {
	case errors.As(err, &se):
		st := se.Status()
		if st.Reason == metav1.StatusReasonUnauthorized {
			fmt.Fprintln(c.Stderr, "error: You must be logged in to the server (Unauthorized)")
		} else if st.Reason != "" && st.Reason != metav1.StatusReasonUnknown {
			fmt.Fprintf(c.Stderr, "Error from server (%s): %s\n", st.Reason, st.Message)
		} else {
			fmt.Fprintf(c.Stderr, "Error from server: %s\n", st.Message)
		}
	case errors.Is(err, syscall.ECONNREFUSED):
		fmt.Fprintf(c.Stderr, "The connection to the server %s was refused - did you specify the right host or port?\n", server)
	default:
		fmt.Fprintf(c.Stderr, "Unable to connect to the server: %v\n", err)
	}
	return 1
}

// kubectlConfig loads the kubeconfig kubectl would, from the host's file
// system, with the files it names read in, and returns the client
// configuration and the server's host:port. A server on a loopback
// address is reached where the host's own k3s server listens (else at the
// host's first address): sandbox hosts share the machine's loopback, and
// a k3s server of the sandbox listens on its node address only.
func (n *Network) kubectlConfig(f hostFS, flag string, lookupEnv func(string) (string, bool)) (*rest.Config, string, error) {
	file := flag
	if file == "" {
		if v, ok := lookupEnv("KUBECONFIG"); ok && v != "" {
			file = strings.Split(v, ":")[0]
		} else if f.Exists(k3semu.DefaultKubeconfig) {
			file = k3semu.DefaultKubeconfig
		} else if home, ok := lookupEnv("HOME"); ok && f.Exists(path.Join(home, ".kube", "config")) {
			file = path.Join(home, ".kube", "config")
		}
	}
	var kc *clientcmdapi.Config
	if file == "" {
		kc = clientcmdapi.NewConfig()
	} else {
		data, err := f.ReadFile(file)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, "", fmt.Errorf("stat %s: no such file or directory", file)
		}
		if err != nil {
			return nil, "", fmt.Errorf("error loading config file %q: %v", file, err)
		}
		if kc, err = clientcmd.Load(data); err != nil {
			return nil, "", fmt.Errorf("error loading config file %q: %v", file, err)
		}
		dir := path.Dir(file)
		read := func(p string) ([]byte, error) {
			if !path.IsAbs(p) {
				p = path.Join(dir, p)
			}
			return f.ReadFile(p)
		}
		for _, cl := range kc.Clusters {
			if cl.CertificateAuthority != "" {
				b, err := read(cl.CertificateAuthority)
				if err != nil {
					return nil, "", err
				}
				cl.CertificateAuthorityData, cl.CertificateAuthority = b, ""
			}
		}
		for _, ai := range kc.AuthInfos {
			if ai.ClientCertificate != "" {
				b, err := read(ai.ClientCertificate)
				if err != nil {
					return nil, "", err
				}
				ai.ClientCertificateData, ai.ClientCertificate = b, ""
			}
			if ai.ClientKey != "" {
				b, err := read(ai.ClientKey)
				if err != nil {
					return nil, "", err
				}
				ai.ClientKeyData, ai.ClientKey = b, ""
			}
		}
	}
	server := "localhost:8080"
	if ctx := kc.Contexts[kc.CurrentContext]; ctx != nil {
		if cl := kc.Clusters[ctx.Cluster]; cl != nil {
			if u, err := url.Parse(cl.Server); err == nil && u.Host != "" {
				server = u.Host
			}
		}
	}
	var cfg *rest.Config
	if file == "" || kc.CurrentContext == "" {
		cfg = &rest.Config{Host: "http://localhost:8080"}
	} else {
		var err error
		if cfg, err = clientcmd.NewDefaultClientConfig(*kc, &clientcmd.ConfigOverrides{}).ClientConfig(); err != nil {
			return nil, "", fmt.Errorf("%v", err)
		}
	}
	cfg.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if host, port, err := net.SplitHostPort(addr); err == nil && (host == "localhost" || host == "127.0.0.1" || host == "::1") {
			addr = n.localAddr(f.h, port)
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	return cfg, server, nil
}
