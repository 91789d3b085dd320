package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/recommend-job/recommend-job/internal/plan"
)

// TestInterruptedRunSaysSo checks that a run cut short says so in every
// format, and counts as partial and incomplete.
func TestInterruptedRunSaysSo(t *testing.T) {
	const why = "run deadline of 10m0s exceeded during history"
	entry := plan.Item{Namespace: "shop", Name: "web", Valid: true, Target: plan.Target{Kind: "Deployment", Name: "web"},
		Containers: []plan.Container{{Name: "app", Resources: []plan.Resource{{Resource: "cpu", Current: q("500m"),
			Reason: plan.ReasonHistoryUnavailable + "querying cpu in namespace shop: run deadline of 10m0s exceeded"}}}}}
	tests := []struct {
		name        string
		interrupted string
		wantTable   bool
	}{
		{name: "cut short", interrupted: why, wantTable: true},
		{name: "complete", interrupted: "", wantTable: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &plan.Plan{Items: []plan.Item{entry}, Interrupted: tt.interrupted}
			var table, js bytes.Buffer
			if err := Write(&table, r, FormatTable); err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(table.String(), "cut short: "+why); got != tt.wantTable {
				t.Errorf("table says cut short = %v, want %v:\n%s", got, tt.wantTable, table.String())
			}
			if !strings.Contains(table.String(), "shop/web") {
				t.Errorf("table lost the entries:\n%s", table.String())
			}
			if err := Write(&js, r, FormatJSON); err != nil {
				t.Fatal(err)
			}
			var decoded map[string]any
			if err := json.Unmarshal(js.Bytes(), &decoded); err != nil {
				t.Fatal(err)
			}
			if got, _ := decoded["interrupted"].(string); got != tt.interrupted {
				t.Errorf("json interrupted = %q, want %q", got, tt.interrupted)
			}
			// The entry's missing history counts either way; an empty run
			// counts only when it was cut short.
			empty := &plan.Plan{Interrupted: tt.interrupted}
			if got := empty.Partial(); got != tt.wantTable {
				t.Errorf("Partial() of an empty run = %v, want %v", got, tt.wantTable)
			}
			if got := empty.Incomplete(); got != tt.wantTable {
				t.Errorf("Incomplete() of an empty run = %v, want %v", got, tt.wantTable)
			}
		})
	}
}
