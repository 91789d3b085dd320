package edits

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/recommend-job/recommend-job/internal/render/repoindex"
	"github.com/recommend-job/recommend-job/internal/render/yamledit"
)

var testTarget = repoindex.Target{APIVersion: "apps/v1", Kind: "Deployment", Name: "x"}

// requests is a change of container's requests, given as name, quantity.
func requests(container string, kv ...string) Resources {
	c := Resources{Target: testTarget, Container: container, Requests: corev1.ResourceList{}}
	for i := 0; i+1 < len(kv); i += 2 {
		c.Requests[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return c
}

// editOne applies c to the document of in that defines its target.
func editOne(t *testing.T, in string, c Resources) (string, *File, error) {
	t.Helper()
	docs, err := yamledit.ParseDocuments([]byte(in))
	if err != nil {
		t.Fatalf("input does not parse: %v", err)
	}
	doc := -1
	for i, d := range docs {
		if k, _, ok := repoindex.Identify(d); ok && k == repoindex.KeyOf(c.Target) {
			doc = i
		}
	}
	if doc < 0 {
		t.Fatal("input does not define the target")
	}
	fe := newFile(&repoindex.IndexedFile{Name: "m.yaml", Data: []byte(in)})
	_, err = fe.Apply(c, doc, nil)
	return string(fe.Data), fe, err
}

const head = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\nspec:\n  template:\n    spec:\n      containers:\n"

// TestEdit covers the edge cases of splicing and when it gives way to a
// re-serialisation of the document.
func TestEdit(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		change    Resources
		want      string // "" when the input must stay as it is
		reencoded bool
		err       error // sentinel, or errAny
	}{{
		name:   "BOM and a value on the first line",
		in:     "\ufeff{apiVersion: apps/v1, kind: Deployment, metadata: {name: x}, spec: {template: {spec: {containers: [{name: app, resources: {requests: {cpu: 1}}}]}}}}\n",
		change: requests("app", "cpu", "250m"),
		want:   "\ufeff{apiVersion: apps/v1, kind: Deployment, metadata: {name: x}, spec: {template: {spec: {containers: [{name: app, resources: {requests: {cpu: 250m}}}]}}}}\n",
	}, {
		name:   "multi-byte characters before the value on its line",
		in:     head + "      - {name: app, image: \"ünïcödé/é\", resources: {requests: {cpu: 1}}}\n",
		change: requests("app", "cpu", "250m"),
		want:   head + "      - {name: app, image: \"ünïcödé/é\", resources: {requests: {cpu: 250m}}}\n",
	}, {
		name:   "tab after the colon",
		in:     head + "      - name: app\n        resources:\n          requests:\n            cpu:\t100m # c\n",
		change: requests("app", "cpu", "250m"),
		want:   head + "      - name: app\n        resources:\n          requests:\n            cpu:\t250m # c\n",
	}, {
		name:   "empty quantity",
		in:     head + "      - name: app\n        resources:\n          requests:\n            cpu: # none\n            memory:\n",
		change: requests("app", "cpu", "250m", "memory", "1Gi"),
		want:   head + "      - name: app\n        resources:\n          requests:\n            cpu: 250m # none\n            memory: 1Gi\n",
	}, {
		name:   "null requests with a comment",
		in:     head + "      - name: app\n        resources:\n          requests: null # later\n          limits: {}\n",
		change: requests("app", "cpu", "250m"),
		want:   head + "      - name: app\n        resources:\n          requests: # later\n            cpu: 250m\n          limits: {}\n",
	}, {
		name:   "empty mapping in flow context",
		in:     head + "      - {name: app, resources: {}}\n      - {name: b, resources: {requests: {}}}\n",
		change: requests("app", "cpu", "250m"),
		want:   head + "      - {name: app, resources: {requests: {cpu: 250m}}}\n      - {name: b, resources: {requests: {}}}\n",
	}, {
		name:   "empty requests in flow context",
		in:     head + "      - {name: app, resources: {requests: {}}}\n",
		change: requests("app", "cpu", "250m"),
		want:   head + "      - {name: app, resources: {requests: {cpu: 250m}}}\n",
	}, {
		name:   "multi-line flow mapping with a trailing comma and comment",
		in:     head + "      - {\n          name: app,\n          image: x, # pinned\n        }\n",
		change: requests("app", "cpu", "250m"),
		want:   head + "      - {\n          name: app,\n          image: x, resources: {requests: {cpu: 250m}}, # pinned\n        }\n",
	}, {
		name:   "block scalar as the last entry",
		in:     head + "      - name: app\n        command:\n        - sh\n        - |\n          # not a comment\n          echo hi\n\n      - name: next\n",
		change: requests("app", "cpu", "250m"),
		want:   head + "      - name: app\n        command:\n        - sh\n        - |\n          # not a comment\n          echo hi\n        resources:\n          requests:\n            cpu: 250m\n\n      - name: next\n",
	}, {
		name:   "comment after a blank line stays with what follows",
		in:     head + "      - name: app\n        image: x\n\n        # next is b\n      - name: b\n",
		change: requests("app", "cpu", "250m"),
		want:   head + "      - name: app\n        image: x\n        resources:\n          requests:\n            cpu: 250m\n\n        # next is b\n      - name: b\n",
	}, {
		name:   "document marker right after the container",
		in:     head + "      - name: app\n        image: x\n---\nkind: Other\n",
		change: requests("app", "cpu", "250m"),
		want:   head + "      - name: app\n        image: x\n        resources:\n          requests:\n            cpu: 250m\n---\nkind: Other\n",
	}, {
		name:   "nesting step taken from the container",
		in:     head + "      - name: app\n        resources:\n            limits:\n                cpu: 1\n",
		change: requests("app", "cpu", "250m"),
		want:   head + "      - name: app\n        resources:\n            limits:\n                cpu: 1\n            requests:\n                cpu: 250m\n",
	}, {
		name:   "old Mac line breaks",
		in:     strings.ReplaceAll(head+"      - name: app\n        image: x\n", "\n", "\r"),
		change: requests("app", "cpu", "250m"),
		want:   strings.ReplaceAll(head+"      - name: app\n        image: x\n        resources:\n          requests:\n            cpu: 250m\n", "\n", "\r"),
	}, {
		name:      "tagged scalar is re-serialised",
		in:        head + "      - name: app\n        resources:\n          requests:\n            cpu: !!str 100m\n",
		change:    requests("app", "cpu", "250m"),
		want:      head + "      - name: app\n        resources:\n          requests:\n            cpu: 250m\n",
		reencoded: true,
	}, {
		name:      "plain scalar over two lines is re-serialised",
		in:        head + "      - name: app\n        resources:\n          requests:\n            memory: 100\n              Mi\n",
		change:    requests("app", "memory", "1Gi"),
		want:      head + "      - name: app\n        resources:\n          requests:\n            memory: 1Gi\n",
		reencoded: true,
	}, {
		// The splice would cut the kept blank lines off the scalar; the
		// check after splicing catches it. Only the container's lines are
		// re-serialised: the blank lines after its last line stay after it.
		name:      "keep-chomping block scalar is re-serialised",
		in:        head + "      - name: app\n        args: |+\n          x\n\n\n      - name: b\n",
		change:    requests("app", "cpu", "250m"),
		want:      head + "      - name: app\n        args: |+\n          x\n\n\n        resources:\n          requests:\n            cpu: 250m\n\n\n      - name: b\n",
		reencoded: true,
	}, {
		// Nothing smaller than the document holds the edit on lines of
		// its own: the file is refused rather than rewritten.
		name:   "tagged scalar in a flow container is refused",
		in:     head + "      - {name: app, resources: {requests: {cpu: !!str 1}}}\n      - name: b\n\n        image: b\n",
		change: requests("app", "cpu", "250m"),
		err:    repoindex.ErrUnsafeFile,
	}, {
		name:   "container named twice",
		in:     head + "      - name: app\n      - name: app\n",
		change: requests("app", "cpu", "250m"),
		err:    repoindex.ErrAmbiguousTarget,
	}, {
		name:   "resources defined twice",
		in:     head + "      - name: app\n        resources: {}\n        resources: {}\n",
		change: requests("app", "cpu", "250m"),
		err:    repoindex.ErrUnsafeFile,
	}, {
		name:   "container is an alias",
		in:     head + "      - name: sidecar\n        env: &env [{name: A}]\n      - &app {name: app}\n      initContainers: [*app]\n",
		change: requests("app", "cpu", "250m"),
		err:    repoindex.ErrUnsafeFile,
	}, {
		name:   "alias of a container",
		in:     "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\n  annotations:\n    c: &c {name: app}\nspec:\n  template:\n    spec:\n      containers: [*c]\n",
		change: requests("app", "cpu", "250m"),
		err:    repoindex.ErrUnsafeFile,
	}, {
		name:   "template is an alias",
		in:     "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\n  annotations: &t\n    spec: {containers: [{name: app}]}\nspec:\n  template: *t\n",
		change: requests("app", "cpu", "250m"),
		err:    repoindex.ErrUnsafeFile,
	}, {
		name:   "alias inside resources",
		in:     head + "      - name: app\n        resources:\n          requests: {cpu: &c 1}\n          limits: {cpu: *c}\n",
		change: requests("app", "cpu", "250m"),
		err:    repoindex.ErrUnsafeFile,
	}, {
		name:   "no pod template",
		in:     "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\nspec:\n  replicas: 1\n",
		change: requests("app", "cpu", "250m"),
		err:    repoindex.ErrContainerNotFound,
	}, {
		name:   "resources is a list",
		in:     head + "      - name: app\n        resources: [1]\n",
		change: requests("app", "cpu", "250m"),
		err:    errAny,
	}, {
		name:   "quantity is a mapping",
		in:     head + "      - name: app\n        resources:\n          requests:\n            cpu: {a: 1}\n",
		change: requests("app", "cpu", "250m"),
		err:    errAny,
	}, {
		name:   "nothing asked",
		in:     head + "      - name: app\n",
		change: requests("app"),
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, fe, err := editOne(t, tt.in, tt.change)
			switch {
			case tt.err == nil && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.err == errAny && err == nil, tt.err != nil && tt.err != errAny && !errors.Is(err, tt.err): //nolint:errorlint // errAny is a marker of the table, not an error
				t.Fatalf("error %v, want %v", err, tt.err)
			}
			want := tt.want
			if want == "" {
				want = tt.in
			}
			if msg := firstDiff([]byte(want), []byte(got)); msg != "" {
				t.Errorf("%s\ngot:\n%s", msg, got)
			}
			if reencoded := fe.Reencoded > 0; reencoded != tt.reencoded {
				t.Errorf("re-serialised = %v, want %v", reencoded, tt.reencoded)
			}
		})
	}
}

// errAny stands for an error that wraps no sentinel.
var errAny = errors.New("any error")

// firstDiff describes the first line where got differs from want, line
// breaks included, or returns "".
func firstDiff(want, got []byte) string {
	if bytes.Equal(want, got) {
		return ""
	}
	wl, gl := bytes.SplitAfter(want, []byte("\n")), bytes.SplitAfter(got, []byte("\n"))
	for i := range max(len(wl), len(gl)) {
		w, g := "<end of file>", "<end of file>"
		if i < len(wl) {
			w = strconv.Quote(string(wl[i]))
		}
		if i < len(gl) {
			g = strconv.Quote(string(gl[i]))
		}
		if w != g {
			return fmt.Sprintf("first difference at line %d:\n  want %s\n  got  %s", i+1, w, g)
		}
	}
	return "differs"
}
