//go:build integration

package record

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/recommend-job/recommend-job/internal/gitops"
)

// TestAPIServerAcceptsFullPages writes, to a real apiserver, a record
// whose changes do not compress (random hex), so that its ConfigMap and
// each page hold a full MaxPage: the apiserver accepts every one, and the
// record reads back whole.
func TestAPIServerAcceptsFullPages(t *testing.T) {
	ctx := context.Background()
	client, err := kubernetes.NewForConfig(bed.APIServer.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	cms := client.CoreV1().ConfigMaps("default")
	s := New(cms, "default", "")
	random := make([]byte, 2*MaxPage)
	if _, err := rand.Read(random); err != nil {
		t.Fatal(err)
	}
	want := []gitops.Pushed{{Commit: "a", Branch: "recommend-job/payments-prod", PullRequest: 1, Time: time.Now().UTC(),
		Changes: hex.EncodeToString(random)}}
	if err := s.Update(ctx, func([]gitops.Pushed) []gitops.Pushed { return want }); err != nil {
		t.Fatal(err)
	}
	head, err := cms.Get(ctx, DefaultName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(head.BinaryData[key]); got != MaxPage {
		t.Errorf("the record's ConfigMap holds %d bytes, want a full page of %d", got, MaxPage)
	}
	pages, err := cms.List(ctx, metav1.ListOptions{LabelSelector: labelRecord + "=" + DefaultName})
	if err != nil {
		t.Fatal(err)
	}
	full := 0
	for _, p := range pages.Items {
		if len(p.BinaryData[key]) == MaxPage {
			full++
		}
	}
	if len(pages.Items) < 2 || full < 1 {
		t.Errorf("the record has %d pages, %d full; want at least 2, one full", len(pages.Items), full)
	}
	got, err := s.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Changes != want[0].Changes {
		t.Errorf("Load() = %d entries, want the one written, whole", len(got))
	}
}
