package node

import (
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/recommend-job/recommend-job/internal/testbed"
)

// TestTokenLines checks the apiserver's token file lines for the node's
// components: one each, with a token of its own, and the kubelet's in
// the group the Node authorizer knows.
func TestTokenLines(t *testing.T) {
	api, err := newAPIServer()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(api.tokenLines(), "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("got %d token lines, want 4:\n%s", len(lines), api.tokenLines())
	}
	seen := map[string]bool{}
	for _, line := range lines {
		fields := strings.SplitN(line, ",", 4)
		if len(fields) < 3 {
			t.Fatalf("token line %q has fewer than 3 fields", line)
		}
		token, user := fields[0], fields[1]
		if len(token) != 64 || seen[token] {
			t.Errorf("%s: token %q is not 32 random bytes of its own", user, token)
		}
		seen[token] = true
		if fields[2] != user {
			t.Errorf("%s: uid %q, want the user's name", user, fields[2])
		}
		wantGroup := user == nodeUser
		if gotGroup := len(fields) == 4 && fields[3] == `"system:nodes"`; gotGroup != wantGroup {
			t.Errorf("%s: line %q: in system:nodes %v, want %v", user, line, gotGroup, wantGroup)
		}
	}
	if want := "system:node:" + Name; nodeUser != want {
		t.Errorf("the kubelet's user is %q, want %q, which the Node authorizer ties to the node", nodeUser, want)
	}
}

// TestWriteComponentKubeconfig checks that a component's kubeconfig
// names the apiserver, trusts its CA and carries that component's token.
func TestWriteComponentKubeconfig(t *testing.T) {
	api, err := newAPIServer()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	n := &Node{Dir: dir, api: api}
	server := &testbed.APIServer{URL: "https://" + Address + ":6443", CAData: []byte("ca")}
	for user, file := range map[string]string{
		nodeUser:              "node-testbed-node.kubeconfig",
		controllerManagerUser: "kube-controller-manager.kubeconfig",
		schedulerUser:         "kube-scheduler.kubeconfig",
		proxyUser:             "kube-proxy.kubeconfig",
	} {
		path, err := n.writeComponentKubeconfig(server, user)
		if err != nil {
			t.Fatal(err)
		}
		if want := filepath.Join(dir, "pki", file); path != want {
			t.Errorf("%s: kubeconfig at %s, want %s", user, path, want)
		}
		cfg, err := clientcmd.LoadFromFile(path)
		if err != nil {
			t.Fatal(err)
		}
		rest, err := clientcmd.NewDefaultClientConfig(*cfg, nil).ClientConfig()
		if err != nil {
			t.Fatal(err)
		}
		if rest.Host != server.URL || string(rest.CAData) != "ca" || rest.BearerToken != api.tokens[user] {
			t.Errorf("%s: kubeconfig for %s with CA %q and token %q, want %s, %q and the user's token",
				user, rest.Host, rest.CAData, rest.BearerToken, server.URL, "ca")
		}
	}
}

// TestStopUnprepared checks that stopping a node that never started, as
// the bed does after a failed start, does nothing.
func TestStopUnprepared(t *testing.T) {
	var none *Node
	for _, n := range []*Node{none, New("image.tar")} {
		if err := n.Stop(t.Context()); err != nil {
			t.Errorf("Stop of an unprepared node: %v", err)
		}
	}
}
