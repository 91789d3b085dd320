package bench

import (
	"bytes"
	"encoding/json"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/recommend-job/recommend-job/internal/kinds"
)

func TestFleet(t *testing.T) {
	f := NewFleet(1000)
	if len(f.Namespaces) != 50 || len(f.Workloads) != 1000 {
		t.Fatalf("NewFleet(1000) = %d namespaces, %d workloads; want 50 and 1000", len(f.Namespaces), len(f.Workloads))
	}
	if d, s, ds := f.Count(KindDeployment), f.Count(KindStatefulSet), f.Count(KindDaemonSet); d != 800 || s != 100 || ds != 100 {
		t.Errorf("kinds = %d Deployments, %d StatefulSets, %d DaemonSets; want 800, 100, 100", d, s, ds)
	}
	perNamespace := map[string]map[string]int{}
	for _, w := range f.Workloads {
		if perNamespace[w.Namespace] == nil {
			perNamespace[w.Namespace] = map[string]int{}
		}
		perNamespace[w.Namespace][w.Kind]++
	}
	for ns, k := range perNamespace {
		if k[KindDeployment] != 16 || k[KindStatefulSet] != 2 || k[KindDaemonSet] != 2 {
			t.Errorf("namespace %s holds %v, want 16 Deployments, 2 StatefulSets and 2 DaemonSets", ns, k)
		}
	}
	if small := NewFleet(7); len(small.Namespaces) != 1 || len(small.Workloads) != 7 {
		t.Errorf("NewFleet(7) = %d namespaces, %d workloads; want 1 and 7", len(small.Namespaces), len(small.Workloads))
	}
}

// TestPods checks that every pod is named as its kind names pods, both for
// the job's attribution and for katalyst's, and that nothing else matches.
func TestPods(t *testing.T) {
	f := NewFleet(100)
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	end := start.Add(7 * 24 * time.Hour)
	for _, w := range f.Workloads {
		pods := w.Pods(start, end)
		names := map[string]bool{}
		alive := 0
		for _, p := range pods {
			names[p.Name] = true
			if !p.Start.After(start) {
				alive++
			}
		}
		wantNames := 2 * podsPerWorkload
		if w.Kind == KindStatefulSet {
			wantNames = podsPerWorkload
		}
		if len(pods) != 2*podsPerWorkload || len(names) != wantNames || alive != podsPerWorkload {
			t.Errorf("%s %s: %d pods, %d names, %d alive at the start; want %d, %d, %d",
				w.Kind, w.Name, len(pods), len(names), alive, 2*podsPerWorkload, wantNames, podsPerWorkload)
		}
		job := regexp.MustCompile("^(?:" + kinds.PodNamePattern(w.Kind, w.Name) + ")$")
		katalyst := regexp.MustCompile(katalystPodRegex(w))
		for name := range names {
			if !job.MatchString(name) || !katalyst.MatchString(name) {
				t.Errorf("%s %s: pod %s matches the job's pattern %v, katalyst's %v; want both", w.Kind, w.Name, name, job.MatchString(name), katalyst.MatchString(name))
			}
		}
		for _, other := range f.Workloads[:10] {
			if other.Name == w.Name {
				continue
			}
			for _, p := range other.Pods(start, end) {
				if job.MatchString(p.Name) || katalyst.MatchString(p.Name) {
					t.Errorf("%s's patterns match %s's pod %s", w.Name, other.Name, p.Name)
				}
			}
		}
	}
}

// TestRepository builds every overlay of the repository with kustomize and
// checks that it renders its namespace's kustomize workloads in it, with
// the overlay's patch applied.
func TestRepository(t *testing.T) {
	f := NewFleet(60)
	files := f.RepositoryFiles()
	fs := filesys.MakeFsInMemory()
	for name, content := range files {
		if err := fs.WriteFile("/"+name, []byte(content)); err != nil {
			t.Fatal(err)
		}
	}
	plain, kustomized := 0, 0
	for _, w := range f.Workloads {
		if _, ok := files[w.File()]; !ok {
			t.Errorf("%s: no file %s", w.Name, w.File())
		}
		if w.Kustomize {
			kustomized++
		} else {
			plain++
		}
	}
	if kustomized != 20 || plain != 40 {
		t.Errorf("%d workloads in kustomize, %d plain; want a third, 20, and 40", kustomized, plain)
	}
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	for _, ns := range f.Namespaces {
		dir := path.Join("/kustomize", ns, "overlay")
		m, err := k.Run(fs, dir)
		if err != nil {
			t.Fatalf("kustomize build %s: %v", dir, err)
		}
		for _, r := range m.Resources() {
			if r.GetNamespace() != ns {
				t.Errorf("%s renders %s in %q, want %s", dir, r.GetName(), r.GetNamespace(), ns)
			}
			if patched := r.GetAnnotations()[overlayAnnotation] == "true"; patched != (r.GetKind() == KindDeployment) {
				t.Errorf("%s renders %s %s with annotations %v; want the overlay's on Deployments only", dir, r.GetKind(), r.GetName(), r.GetAnnotations())
			}
		}
	}
}

func TestGrid(t *testing.T) {
	origin := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name        string
		from, to    time.Duration
		first, last time.Duration
		ok          bool
	}{
		{"aligned", 0, 3 * time.Minute, 0, 2 * time.Minute, true},
		{"off the grid", 30 * time.Second, 3*time.Minute + 30*time.Second, time.Minute, 3 * time.Minute, true},
		{"one sample", time.Minute, time.Minute + time.Second, time.Minute, time.Minute, true},
		{"none", 10 * time.Second, 50 * time.Second, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			first, last, ok := grid(origin, origin.Add(tt.from), origin.Add(tt.to))
			if ok != tt.ok || (ok && (!first.Equal(origin.Add(tt.first)) || !last.Equal(origin.Add(tt.last)))) {
				t.Errorf("grid(+%s, +%s) = +%s, +%s, %v; want +%s, +%s, %v", tt.from, tt.to,
					first.Sub(origin), last.Sub(origin), ok, tt.first, tt.last, tt.ok)
			}
		})
	}
}

// TestTimeline cuts a run into the logged stages, with startup and exit
// around them and render cut out of git by its requests.
func TestTimeline(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	logged := []StageLog{
		{Name: "collect", End: at(100), Took: 90 * time.Millisecond},
		{Name: "history", End: at(1000), Took: 900 * time.Millisecond},
		{Name: "git", End: at(2000), Took: time.Second},
	}
	git := []Request{
		{Method: "GET", Path: "/bench.git/info/refs", Query: "service=git-upload-pack", Start: at(1010), End: at(1020)},
		{Method: "GET", Path: "/bench.git/info/refs", Query: "service=git-upload-pack", Start: at(1030), End: at(1040)},
		{Method: "POST", Path: "/bench.git/git-upload-pack", Start: at(1050), End: at(1100)},
		{Method: "GET", Path: "/bench.git/info/refs", Query: "service=git-upload-pack", Start: at(1800), End: at(1810)},
		{Method: "GET", Path: "/bench.git/info/refs", Query: "service=git-receive-pack", Start: at(1820), End: at(1830)},
		{Method: "POST", Path: "/bench.git/git-receive-pack", Start: at(1840), End: at(1990)},
	}
	stages := Timeline(at(0), at(2050), logged, git)
	var got []string
	for _, s := range stages {
		got = append(got, s.Name+"="+s.Wall().String())
	}
	want := "startup=10ms collect=90ms history=900ms render=700ms git=300ms exit=50ms"
	if strings.Join(got, " ") != want {
		t.Fatalf("Timeline() = %s, want %s", strings.Join(got, " "), want)
	}
	if !stages[3].Derived {
		t.Error("render is not marked as derived")
	}
	for _, c := range []struct {
		ms   int
		want string
	}{{-5, StageStartup}, {50, "collect"}, {1020, StageGit}, {1500, StageRender}, {1850, StageGit}, {2100, StageExit}} {
		if got := stages[stageOf(stages, at(c.ms))].Name; got != c.want {
			t.Errorf("stageOf(+%dms) = %s, want %s", c.ms, got, c.want)
		}
	}
	logged = append(logged[:2], StageLog{Name: StageRender, End: at(1500), Took: 500 * time.Millisecond}, logged[2])
	logged[3].Took = 500 * time.Millisecond
	if stages := Timeline(at(0), at(2000), logged, git); len(stages) != 5 || stages[3].Derived || stages[3].Name != StageRender {
		t.Errorf("with a logged render stage, Timeline() = %+v; want it as logged", stages)
	}
}

func TestScannedSamples(t *testing.T) {
	body := `{"status":"success","data":{"resultType":"matrix","result":[],"stats":{"timings":{},"samples":{"totalQueryableSamplesPerStep":[[1,2]],"totalQueryableSamples":12345,"peakSamples":4}}}}`
	if n, err := scannedSamples([]byte(body)); err != nil || n != 12345 {
		t.Errorf("scannedSamples() = %d, %v; want 12345", n, err)
	}
	if _, err := scannedSamples([]byte(`{"status":"success","data":{}}`)); err == nil {
		t.Error("scannedSamples() of an answer without statistics: no error")
	}
}

func TestBaselineQueries(t *testing.T) {
	f := NewFleet(20)
	end := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	if got := baselineQueries(f, end, 7*24*time.Hour, 5*time.Minute); len(got) != 4*20 {
		t.Errorf("a week: %d queries, want 4 per workload (2 containers x 2 resources), 80", len(got))
	}
	// 30 days at 1m are 43,201 points: four ranges of at most 11,000.
	got := baselineQueries(f, end, 30*24*time.Hour, 5*time.Minute)
	if len(got) != 4*20*4 {
		t.Errorf("30 days: %d queries, want 4 ranges each, %d", len(got), 4*20*4)
	}
	q := got[0]
	if !strings.HasPrefix(q.query, `rate(container_cpu_usage_seconds_total{container!="POD",namespace="bench-000",pod=~"^web-00000-[a-z0-9]+-[a-z0-9]{5}$",container="app"}[5m])`) {
		t.Errorf("first query = %s", q.query)
	}
}

func TestFormat(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{formatCount(1234567), "1,234,567"},
		{formatCount(999), "999"},
		{formatSI(9999), "9,999"},
		{formatSI(403_200_000), "403.2M"},
		{formatBytes(3 << 20), "3.0 MiB"},
		{formatDuration(1234567 * time.Microsecond), "1.235s"},
		{formatDuration(75 * time.Second), "1m15s"},
		{formatRatio(0), "-"},
		{formatRatio(1.234), "1.23x"},
	} {
		if c.got != c.want {
			t.Errorf("got %s, want %s", c.got, c.want)
		}
	}
}

func TestQueryShapes(t *testing.T) {
	req := func(ns string) Request {
		return Request{Path: "/api/v1/query_range", Form: map[string][]string{
			"query": {`max by (pod, container) (rate(container_cpu_usage_seconds_total{container!="",namespace="` + ns + `",pod=~"web-[a-z]+|db-\"x\""}[5m]))`},
			"start": {"0"}, "end": {"604800"}, "step": {"60"},
		}}
	}
	listing := Request{Path: "/api/v1/series", Form: map[string][]string{
		"match[]": {`{__name__=~"kube_pod_owner|kube_job_owner",namespace="a"}`}, "start": {"0"}, "end": {"604800"},
	}}
	got := queryShapes([]Request{listing, req("a"), req("b"), {Path: "/api/v1/labels"}})
	want := []string{
		`1 x series {__name__=~"kube_pod_owner|kube_job_owner",namespace="…"} over 168h0m0s`,
		`2 x max by (pod, container) (rate(container_cpu_usage_seconds_total{container!="",namespace="…",pod=~"…"}[5m])) over 168h0m0s at a 1m0s step`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("queryShapes() = %q, want %q", got, want)
	}
}

func TestMaxOverlap(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	r := func(from, to int) Request {
		return Request{Start: t0.Add(time.Duration(from) * time.Second), End: t0.Add(time.Duration(to) * time.Second)}
	}
	if n := MaxOverlap([]Request{r(0, 10), r(1, 5), r(2, 3), r(6, 12), r(10, 11)}); n != 3 {
		t.Errorf("MaxOverlap() = %d, want 3", n)
	}
	if n := MaxOverlap([]Request{r(0, 1), r(1, 2)}); n != 1 {
		t.Errorf("MaxOverlap() of back-to-back requests = %d, want 1", n)
	}
}

func TestContinueToken(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	list := &metav1.PartialObjectMetadataList{
		TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadataList"},
		ListMeta: metav1.ListMeta{Continue: "next-page"},
		Items:    []metav1.PartialObjectMetadata{{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "a"}}},
	}
	var proto bytes.Buffer
	if err := protobuf.NewSerializer(scheme, scheme).Encode(list, &proto); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, body, want string
	}{
		{"json", `{"kind":"DeploymentList","metadata":{"continue":"next-page"},"items":[]}`, "next-page"},
		{"json, last page", `{"kind":"DeploymentList","metadata":{},"items":[]}`, ""},
		{"protobuf, as the metadata client asks", proto.String(), "next-page"},
		{"neither", "k8s\x00garbage", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := continueToken([]byte(tc.body)); got != tc.want {
				t.Errorf("continueToken = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestChecksBranch names the branch a run pushed to: its own, or how many
// group branches a grouped run, which has none of its own, pushed.
func TestChecksBranch(t *testing.T) {
	for _, tc := range []struct {
		name, git, want string
	}{
		{"one branch", `{"branch": "recommend-job/main", "pushed": true, "files": ["a.yaml"]}`, "recommend-job/main"},
		{"groups", `{"pushed": true, "files": ["a.yaml", "b.yaml"], "branches": ["rj-a", "rj-b"]}`, "2 group branches"},
		{"nothing", `{"branch": "recommend-job/main"}`, "recommend-job/main"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rep Report
			if err := json.Unmarshal([]byte(`{"git": `+tc.git+`}`), &rep); err != nil {
				t.Fatal(err)
			}
			if got := checks(&JobRun{Report: rep}).Branch; got != tc.want {
				t.Errorf("branch = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestOptionsRefuseAGroupedFloor: the floor pushes one branch, so a
// grouped run is refused unless the floor is left out.
func TestOptionsRefuseAGroupedFloor(t *testing.T) {
	for _, tc := range []struct {
		groupBy string
		noFloor bool
		wantErr bool
	}{
		{"none", false, false},
		{"namespace", true, false},
		{"namespace", false, true},
	} {
		_, err := Options{N: 10, RepoRoot: t.TempDir(), GroupBy: tc.groupBy, NoFloor: tc.noFloor}.withDefaults()
		if (err != nil) != tc.wantErr {
			t.Errorf("group-by %s, no-floor %v: error %v, want an error: %v", tc.groupBy, tc.noFloor, err, tc.wantErr)
		}
	}
}
