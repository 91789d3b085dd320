package checkpoint

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

var t0 = time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC)

func entry(ns, name string, folds ...string) Entry {
	e := Entry{Namespace: ns, Kind: "Deployment", Name: name, UID: "uid-" + name, Settings: "s1", End: t0, Folds: map[string][]byte{}}
	for _, f := range folds {
		e.Folds[f] = []byte("slots of " + f)
		if c, _, _ := strings.Cut(f, "/"); !slices.Contains(e.Containers, c) {
			e.Containers = append(e.Containers, c)
		}
	}
	return e
}

// packed packs entries, as a run does before it saves them.
func packed(t *testing.T, entries ...Entry) []Packed {
	t.Helper()
	out := make([]Packed, len(entries))
	for i, e := range entries {
		p, err := Pack(e)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = p
	}
	return out
}

// unpacked is the entry of key in c.
func unpacked(t *testing.T, c *Checkpoint, key string) Entry {
	t.Helper()
	e, err := c.Entries[key].Entry()
	if err != nil {
		t.Fatalf("the entry %s: %v", key, err)
	}
	return e
}

func TestPackKeepsTheEntry(t *testing.T) {
	e := manyEntries(1)[0]
	e.End = t0.Add(90 * time.Minute)
	p := packed(t, e)[0]
	got, err := p.Entry()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(e, got); diff != "" {
		t.Errorf("Pack then Entry (-want +got):\n%s", diff)
	}
	if p.Key() != e.Key() || p.Namespace != e.Namespace || !p.End.Equal(e.End) {
		t.Errorf("Packed names %s in %s up to %s, want %s in %s up to %s", p.Key(), p.Namespace, p.End, e.Key(), e.Namespace, e.End)
	}
	if _, err := (Packed{key: "shop/Deployment/web", data: []byte("not gzip")}).Entry(); err == nil || !strings.Contains(err.Error(), "shop/Deployment/web") {
		t.Errorf("Entry() of damaged data = %v, want an error naming the target", err)
	}
}

func TestSaveLoad(t *testing.T) {
	ctx := context.Background()
	cms := fake.NewClientset().CoreV1().ConfigMaps("recommend-job")
	s := New(cms, "recommend-job", 0)
	if got, err := s.Load(ctx); err != nil || len(got.Entries) != 0 || !got.Generation.IsZero() {
		t.Fatalf("Load() of nothing = %+v, %v, want an empty checkpoint", got, err)
	}
	first := packed(t, entry("shop", "web", "app/cpu", "app/memory"), entry("shop", "api", "app/cpu"))
	if _, err := s.Save(ctx, first, t0); err != nil {
		t.Fatal(err)
	}
	second := packed(t, entry("shop", "web", "app/cpu"))
	if _, err := s.Save(ctx, second, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	got, err := s.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Generation.Equal(t0.Add(time.Hour)) || len(got.Entries) != 1 || string(unpacked(t, got, "shop/Deployment/web").Folds["app/cpu"]) != "slots of app/cpu" {
		t.Errorf("Load() = %+v, want the second generation's one entry", got)
	}
	list, _ := cms.List(ctx, metav1.ListOptions{})
	if len(list.Items) != 1 {
		t.Errorf("%d pages after the second save, want the first generation's deleted", len(list.Items))
	}
	// Another shard keeps its own.
	if other, err := New(cms, "recommend-job", 1).Load(ctx); err != nil || len(other.Entries) != 0 {
		t.Errorf("shard 1 loads %+v, %v, want nothing of shard 0's", other, err)
	}
}

func TestLoadSkipsTamperedAndIncomplete(t *testing.T) {
	ctx := context.Background()
	cms := fake.NewClientset().CoreV1().ConfigMaps("recommend-job")
	s := New(cms, "recommend-job", 0)
	if _, err := s.Save(ctx, packed(t, entry("shop", "web", "app/cpu")), t0); err != nil {
		t.Fatal(err)
	}
	list, _ := cms.List(ctx, metav1.ListOptions{})
	cm := list.Items[0]
	data, err := page(packed(t, func() Entry { e := entry("shop", "web", "app/cpu"); e.UID = "forged"; return e }()))
	if err != nil {
		t.Fatal(err)
	}
	cm.BinaryData[dataKey] = data
	if _, err := cms.Update(ctx, &cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Entries) != 0 || len(got.Skipped) != 1 {
		t.Errorf("Load() of a tampered page = %+v, want it skipped", got)
	}

	// A generation missing a page is passed over for the one before.
	good := New(fake.NewClientset().CoreV1().ConfigMaps("recommend-job"), "recommend-job", 0)
	if _, err := good.Save(ctx, packed(t, entry("shop", "web", "app/cpu")), t0); err != nil {
		t.Fatal(err)
	}
	half := &failingCreates{ConfigMaps: good.client, failAfter: 1}
	big := packed(t, manyEntries(400)...)
	if _, err := New(half, "recommend-job", 0).Save(ctx, big, t0.Add(time.Hour)); err == nil {
		t.Fatal("a save whose second page failed succeeded")
	}
	got, err = good.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Generation.Equal(t0) || len(got.Entries) != 1 {
		t.Errorf("Load() after a half-written generation = generation %s with %d entries, want the one before with 1", got.Generation, len(got.Entries))
	}
}

// failingCreates fails creates after failAfter of them: a run
// that stopped while writing its checkpoint.
type failingCreates struct {
	ConfigMaps
	failAfter int
}

func (c *failingCreates) Create(ctx context.Context, cm *corev1.ConfigMap, opts metav1.CreateOptions) (*corev1.ConfigMap, error) {
	if c.failAfter == 0 {
		return nil, context.DeadlineExceeded
	}
	c.failAfter--
	return c.ConfigMaps.Create(ctx, cm, opts)
}

// manyEntries are n entries of incompressible folds, 4 KiB each.
func manyEntries(n int) []Entry {
	rng := rand.New(rand.NewPCG(1, 2))
	var out []Entry
	for i := range n {
		e := entry("shop", "w"+strconv.Itoa(i), "app/cpu")
		b := make([]byte, 4096)
		for j := range b {
			b[j] = byte(rng.IntN(256))
		}
		e.Folds["app/cpu"] = b
		out = append(out, e)
	}
	return out
}

func TestSavePages(t *testing.T) {
	ctx := context.Background()
	cms := fake.NewClientset().CoreV1().ConfigMaps("recommend-job")
	s := New(cms, "recommend-job", 0)
	many := manyEntries(400)
	saved, err := s.Save(ctx, packed(t, many...), t0)
	if err != nil {
		t.Fatal(err)
	}
	size := saved.Bytes
	list, _ := cms.List(ctx, metav1.ListOptions{})
	if len(list.Items) < 6 {
		t.Errorf("%d pages of %d bytes, want at least 6 of at most %d", len(list.Items), size, MaxPage)
	}
	for _, cm := range list.Items {
		if n := len(cm.BinaryData[dataKey]); n > MaxPage {
			t.Errorf("page %s holds %d bytes, more than %d", cm.Name, n, MaxPage)
		}
	}
	got, err := s.Load(ctx)
	if err != nil || len(got.Entries) != 400 {
		t.Fatalf("Load() = %d entries, %v, want 400", len(got.Entries), err)
	}
	for _, e := range many {
		if diff := cmp.Diff(e, unpacked(t, got, e.Key())); diff != "" {
			t.Fatalf("entry %s after a save and a load (-want +got):\n%s", e.Key(), diff)
		}
	}
}

// TestSaveLeavesOutOversized checks that an entry larger than a page (a
// target of a few hundred noisy containers) is left out and named, and
// that every other target's checkpoint is saved and loads back, wherever
// the large one sorts among them.
func TestSaveLeavesOutOversized(t *testing.T) {
	huge := manyEntries(1)[0]
	huge.Namespace, huge.Name = "big", "fleet"
	rng := rand.New(rand.NewPCG(3, 4))
	for c := range 80 {
		b := make([]byte, 4096) // incompressible: 80 of them pack past a page
		for j := range b {
			b[j] = byte(rng.IntN(256))
		}
		huge.Folds["c"+strconv.Itoa(c)+"/cpu"] = b
	}
	normal := manyEntries(120) // two pages of them
	for _, tt := range []struct {
		name, namespace, target string // where the large entry sorts
	}{
		{"sorted first", "a", "fleet"},
		{"sorted last", "z", "fleet"},
		{"inside a page", "shop", "w5x"}, // between w59 and w6
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			cms := fake.NewClientset().CoreV1().ConfigMaps("recommend-job")
			s := New(cms, "recommend-job", 0)
			big := huge
			big.Namespace, big.Name = tt.namespace, tt.target
			all := packed(t, append([]Entry{big}, normal...)...)
			bigBytes := len(all[0].data)
			if bigBytes <= MaxPage {
				t.Fatalf("the large entry packs to %d bytes, want more than a page's %d", bigBytes, MaxPage)
			}
			saved, err := s.Save(ctx, all, t0)
			if err != nil {
				t.Fatalf("Save() = %v, want the others saved", err)
			}
			want := []LeftOut{{Key: big.Key(), Bytes: bigBytes}}
			if diff := cmp.Diff(want, saved.LeftOut); diff != "" {
				t.Errorf("Save() left out (-want +got):\n%s", diff)
			}
			if list, _ := cms.List(ctx, metav1.ListOptions{}); len(list.Items) != 2 {
				t.Errorf("%d pages, want the others' two", len(list.Items))
			}
			got, err := s.Load(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := got.Entries[big.Key()]; ok || len(got.Entries) != len(normal) {
				t.Errorf("Load() = %d entries, the large one's there: %v; want the %d others alone", len(got.Entries), ok, len(normal))
			}
			for _, e := range normal {
				if diff := cmp.Diff(e, unpacked(t, got, e.Key())); diff != "" {
					t.Fatalf("entry %s after a save and a load (-want +got):\n%s", e.Key(), diff)
				}
			}
		})
	}
	if got := (LeftOut{Key: "big/Deployment/fleet", Bytes: 300000}).Why(); got != "checkpoint left out: 300000 bytes packed, more than a page's 262144" {
		t.Errorf("Why() = %q", got)
	}
}

// TestSaveBoundsWhatAPageUnpacksTo checks that entries whose folds are so
// alike that they pack small are paged by what they unpack to as well,
// which Load bounds: one that alone unpacks past the bound is left out
// and named, two that together would are put on pages of their own, and
// no page is one Load skips, taking other targets' checkpoints with it.
func TestSaveBoundsWhatAPageUnpacksTo(t *testing.T) {
	ctx := context.Background()
	alike := func(name string, size int) Entry {
		e := entry("shop", name, "app/cpu")
		e.Folds["app/cpu"] = make([]byte, size) // zeros: a few KiB packed
		return e
	}
	normal := manyEntries(3) // w0, w1, w2
	// huge unpacks past the bound alone (base64 makes it larger still);
	// each twin fits, both do not.
	huge := alike("w0x", maxInflated)
	twins := []Entry{alike("w1x", maxInflated/2*3/4), alike("w1y", maxInflated/2*3/4)}
	cms := fake.NewClientset().CoreV1().ConfigMaps("recommend-job")
	s := New(cms, "recommend-job", 0)
	all := packed(t, append(append([]Entry{huge}, twins...), normal...)...)
	if all[0].raw <= maxInflated || len(all[0].data) > MaxPage || all[1].raw+all[2].raw <= maxInflated {
		t.Fatalf("sizes: huge %d unpacked, %d packed; twins %d unpacked together, want huge past %d unpacked alone within a page packed, the twins past it together",
			all[0].raw, len(all[0].data), all[1].raw+all[2].raw, maxInflated)
	}
	hugeBytes, hugeRaw := len(all[0].data), all[0].raw
	saved, err := s.Save(ctx, all, t0)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]LeftOut{{Key: huge.Key(), Bytes: hugeBytes, Unpacked: hugeRaw}}, saved.LeftOut); diff != "" {
		t.Errorf("Save() left out (-want +got):\n%s", diff)
	}
	got, err := s.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Skipped) > 0 || len(got.Entries) != 5 {
		t.Errorf("Load() = %d entries, skipped %q; want the 5 others and no page skipped", len(got.Entries), got.Skipped)
	}
	for _, e := range append(twins, normal...) {
		if _, ok := got.Entries[e.Key()]; !ok {
			t.Errorf("%s did not load back", e.Key())
		}
	}
	if got := saved.LeftOut[0].Why(); got != fmt.Sprintf("checkpoint left out: %d bytes unpacked, more than a page's 16777216", hugeRaw) {
		t.Errorf("Why() = %q", got)
	}
}

func TestMismatch(t *testing.T) {
	now := t0.Add(24 * time.Hour)
	want := Want{UID: "uid-web", Settings: "s1", Containers: []string{"app", "sidecar"}, Window: 7 * 24 * time.Hour}
	e := entry("shop", "web", "app/cpu", "app/memory", "sidecar/cpu")
	for _, tt := range []struct {
		name   string
		change func(*Entry, *Want)
		want   string
	}{
		{"matches", func(*Entry, *Want) {}, ""},
		{"another UID", func(e *Entry, _ *Want) { e.UID = "uid-2" }, "checkpoint of another UID"},
		{"other settings", func(_ *Entry, w *Want) { w.Settings = "s2" }, "checkpoint of other settings"},
		{"a container more", func(_ *Entry, w *Want) { w.Containers = append(w.Containers, "init") }, "checkpoint of other containers"},
		{"older than the window", func(e *Entry, _ *Want) { e.End = now.Add(-8 * 24 * time.Hour) }, "checkpoint older than the window"},
		{"from the future", func(e *Entry, _ *Want) { e.End = now.Add(time.Hour) }, "checkpoint from the future"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e, w := e, want
			e.Folds = map[string][]byte{}
			for k, v := range entry("shop", "web", "app/cpu", "app/memory", "sidecar/cpu").Folds {
				e.Folds[k] = v
			}
			w.Containers = append([]string(nil), want.Containers...)
			tt.change(&e, &w)
			if got := e.Mismatch(w, now); got != tt.want {
				t.Errorf("Mismatch() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestEvidence(t *testing.T) {
	week := 7 * 24 * time.Hour
	for _, tt := range []struct {
		kept time.Duration
		why  string
		want string
	}{
		{6 * 24 * time.Hour, "", "7d: 6d from checkpoint + 1d read"},
		{week - time.Hour, "", "7d: 6d23h from checkpoint + 1h read"},
		{0, "checkpoint of another UID", "7d read: checkpoint of another UID"},
		{0, "", "7d read: no checkpoint"},
	} {
		if got := Evidence(week, tt.kept, tt.why); got != tt.want {
			t.Errorf("Evidence(7d, %s, %q) = %q, want %q", tt.kept, tt.why, got, tt.want)
		}
	}
}
