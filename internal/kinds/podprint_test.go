package kinds

import (
	"encoding/json"
	"testing"
)

// deployment decodes a Deployment written as JSON.
func deployment(t *testing.T, spec string) map[string]any {
	t.Helper()
	var obj map[string]any
	if err := json.Unmarshal([]byte(`{"spec":{"template":{"spec":`+spec+`}}}`), &obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

func TestPodPrintDiff(t *testing.T) {
	const live = `{"containers":[
		{"name":"app","image":"nginx:1.26","args":["--port","80"],"env":[{"name":"A","value":"1"},{"name":"B","valueFrom":{"secretKeyRef":{"name":"s","key":"k"}}}],
		 "resources":{"requests":{"cpu":"100m"}}},
		{"name":"log","image":"busybox","command":["tail"]}],
		"initContainers":[{"name":"migrate","image":"tool:1"}],
		"volumes":[{"name":"data"},{"name":"cache"}]}`
	tests := []struct {
		name, candidate, want string
	}{
		{name: "same but resources and order", want: "", candidate: `{"containers":[
			{"name":"log","image":"busybox","command":["tail"],"resources":{"limits":{"memory":"1Gi"}}},
			{"name":"app","image":"nginx:1.26","args":["--port","80"],"env":[{"name":"B","valueFrom":{"configMapKeyRef":{"name":"c","key":"k"}}},{"name":"A","value":"1"}],
			 "resources":{"requests":{"cpu":"2"}}}],
			"initContainers":[{"name":"migrate","image":"tool:1"}],
			"volumes":[{"name":"cache"},{"name":"data"}]}`},
		{name: "image", want: "container app image nginx:1.27, live nginx:1.26", candidate: `{"containers":[
			{"name":"app","image":"nginx:1.27","args":["--port","80"],"env":[{"name":"A","value":"1"}]},
			{"name":"log","image":"busybox","command":["tail"]}],
			"initContainers":[{"name":"migrate","image":"tool:1"}],"volumes":[{"name":"data"},{"name":"cache"}]}`},
		{name: "args", want: `container app args ["--port","8080"], live ["--port","80"]`, candidate: `{"containers":[
			{"name":"app","image":"nginx:1.26","args":["--port","8080"],"env":[{"name":"A","value":"1"}]},
			{"name":"log","image":"busybox","command":["tail"]}],
			"initContainers":[{"name":"migrate","image":"tool:1"}],"volumes":[{"name":"data"},{"name":"cache"}]}`},
		{name: "env value", want: "container app env A 2, live 1", candidate: `{"containers":[
			{"name":"app","image":"nginx:1.26","args":["--port","80"],"env":[{"name":"A","value":"2"}]},
			{"name":"log","image":"busybox","command":["tail"]}],
			"initContainers":[{"name":"migrate","image":"tool:1"}],"volumes":[{"name":"data"},{"name":"cache"}]}`},
		{name: "init container image", want: "init container migrate image tool:2, live tool:1", candidate: `{"containers":[
			{"name":"app","image":"nginx:1.26","args":["--port","80"],"env":[{"name":"A","value":"1"}]},
			{"name":"log","image":"busybox","command":["tail"]}],
			"initContainers":[{"name":"migrate","image":"tool:2"}],"volumes":[{"name":"data"},{"name":"cache"}]}`},
		{name: "container missing", want: "no container log, live has one", candidate: `{"containers":[
			{"name":"app","image":"nginx:1.26","args":["--port","80"],"env":[{"name":"A","value":"1"}]}],
			"initContainers":[{"name":"migrate","image":"tool:1"}],"volumes":[{"name":"data"},{"name":"cache"}]}`},
		{name: "extra volume", want: "volume tmp, live has none", candidate: `{"containers":[
			{"name":"app","image":"nginx:1.26","args":["--port","80"],"env":[{"name":"A","value":"1"}]},
			{"name":"log","image":"busybox","command":["tail"]}],
			"initContainers":[{"name":"migrate","image":"tool:1"}],"volumes":[{"name":"data"},{"name":"cache"},{"name":"tmp"}]}`},
	}
	livePrint, ok := PodPrintOf("apps", "Deployment", deployment(t, live))
	if !ok {
		t.Fatal("the live Deployment has no print")
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			candidate, ok := PodPrintOf("apps", "Deployment", deployment(t, tt.candidate))
			if !ok {
				t.Fatal("no print")
			}
			if got := candidate.Diff(livePrint); got != tt.want {
				t.Errorf("Diff = %q, want %q", got, tt.want)
			}
			if equal := candidate == livePrint; equal != (tt.want == "") {
				t.Errorf("prints equal = %v, want %v", equal, tt.want == "")
			}
		})
	}
}

func TestPodPrintOfWithoutTemplate(t *testing.T) {
	if _, ok := PodPrintOf("", "ConfigMap", map[string]any{"data": map[string]any{}}); ok {
		t.Error("a ConfigMap has a print")
	}
}
