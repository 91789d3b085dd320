package job

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/recommend-job/recommend-job/internal/checkpoint"
	"github.com/recommend-job/recommend-job/internal/collect"
	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/usage"
)

// bloated saves through a store, first making the entry of key larger
// than a page, as a target of a few hundred noisy containers packs.
type bloated struct {
	*checkpoint.Store
	key string
}

func (b bloated) Save(ctx context.Context, entries []checkpoint.Packed, at time.Time) (checkpoint.Saved, error) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i, p := range entries {
		if p.Key() != b.key {
			continue
		}
		e, err := p.Entry()
		if err != nil {
			return checkpoint.Saved{}, err
		}
		for c := range 80 {
			data := make([]byte, 4096) // incompressible
			for j := range data {
				data[j] = byte(rng.IntN(256))
			}
			e.Folds["noise"+strconv.Itoa(c)+"/cpu"] = data
		}
		if entries[i], err = checkpoint.Pack(e); err != nil {
			return checkpoint.Saved{}, err
		}
	}
	return b.Store.Save(ctx, entries, at)
}

// TestCheckpointLeftOutIsNamed checks that a target whose checkpoint is
// larger than a page has it left out, logged by name and said in its
// evidence, while the new generation is written with every other
// target's (here one of a namespace the run did not read).
func TestCheckpointLeftOutIsNamed(t *testing.T) {
	now := time.Date(2026, 3, 10, 10, 37, 0, 0, time.UTC)
	prom, store := steadyWeb(t, now)
	other := checkpoint.Entry{Namespace: "blog", Kind: "Deployment", Name: "web", UID: "uid-blog", End: now.Add(-time.Hour),
		Containers: []string{"app"}, Folds: map[string][]byte{"app/cpu": []byte("slots")}}
	packed, err := checkpoint.Pack(other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Save(t.Context(), []checkpoint.Packed{packed}, now.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	reader := usage.NewReader(prom, usage.WithClock(func() time.Time { return now }))
	p := &plan.Plan{}
	cfg := Config{Checkpoints: bloated{Store: store, key: "shop/Deployment/web"}}
	if _, err := recommendAll(t.Context(), p, []collect.Item{webItem()}, reader, cfg, log); err != nil {
		t.Fatal(err)
	}

	cp, err := store.Load(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cp.Entries["shop/Deployment/web"]; ok || cp.Generation.Equal(now.Add(-time.Hour)) {
		t.Errorf("checkpoint of generation %s holds shop's: %v, want a new generation without it", cp.Generation, ok)
	}
	if _, ok := cp.Entries["blog/Deployment/web"]; !ok {
		t.Errorf("the new generation lost blog's checkpoint: %v", cp.Entries)
	}
	for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		h := evidence(t, p.Items[0], res).History
		if !strings.HasPrefix(h, "7d read: no checkpoint; checkpoint left out: ") || !strings.HasSuffix(h, " bytes packed, more than a page's 262144") {
			t.Errorf("%s history %q, want the read and why its checkpoint is left out", res, h)
		}
	}
	var found bool
	for line := range strings.Lines(logs.String()) {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		if rec["level"] == "WARN" && rec["target"] == "shop/Deployment/web" && rec["bytes"].(float64) > checkpoint.MaxPage {
			found = true
		}
	}
	if !found {
		t.Errorf("no warning names the left-out target in the logs:\n%s", logs.String())
	}
}
