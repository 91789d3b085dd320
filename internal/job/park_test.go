package job

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/recommend-job/recommend-job/internal/plan"
)

// parkedPlan is a plan whose resources hold every kind of evidence the
// report shows: usage points, pointers to zero, lists, none at all.
func parkedPlan() *plan.Plan {
	zero := 0.0
	day := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	cpu := &plan.Evidence{
		Window: "7d", Resolution: "rate over 2m every 1m, from the 1m scrape interval", History: "7d: 6d from checkpoint + 1d read",
		Samples: 10080, Span: "7d", Percentile: 0.9, HalfLife: "24h", RawValue: 0.1234567890123, BucketWidth: 0.005,
		BufferPercent: 30, BufferedValue: 0.16049382571599, RoundingStep: "5m", Capped: []string{"maxAllowed 2"},
		WindowDays: 7, SpanDays: 6.999305555555556, UsageMax: &zero, UsagePeriod: "24h",
		Usage: []plan.UsagePoint{{Start: day, P90: 0.1, Max: 1.9999999999999998}, {Start: day.Add(24 * time.Hour), P90: 0.15, Max: 2}},
	}
	memory := &plan.Evidence{Window: "7d", Samples: 2016, OOMKilled: true, OOMFloor: 536870912, OOMKills: 3, StartupPeak: 805306368, StartupFloor: true}
	every := everyField()
	return &plan.Plan{Items: []plan.Item{
		{Namespace: "ops", Name: "every", Valid: true, Containers: []plan.Container{
			{Name: "app", Resources: []plan.Resource{{Resource: "cpu", Evidence: &every}}},
		}},
		{Namespace: "shop", Name: "web", Valid: true, Containers: []plan.Container{
			{Name: "app", Resources: []plan.Resource{{Resource: "cpu", Evidence: cpu}, {Resource: "memory", Evidence: memory}}},
			{Name: "sidecar", Resources: []plan.Resource{{Resource: "cpu", Reason: "no samples"}}},
		}},
		{Namespace: "shop", Name: "invalid", Error: &plan.Error{Code: "InvalidTarget"}},
		{Namespace: "pay", Name: "api", Valid: true, Containers: []plan.Container{
			{Name: "api", Resources: []plan.Resource{{Resource: "memory", Evidence: &plan.Evidence{Window: "14d", Limit: "ratio 2"}}}},
		}},
	}}
}

// everyField is evidence with every field set, so that a field parking
// would lose (one JSON does not write) fails TestParkEvidence.
func everyField() plan.Evidence {
	var ev plan.Evidence
	v := reflect.ValueOf(&ev).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString(v.Type().Field(i).Name)
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Int, reflect.Int32, reflect.Int64:
			f.SetInt(int64(i + 1))
		case reflect.Float64:
			f.SetFloat(float64(i) + 0.1)
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
		case reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), 1, 1))
		}
		if f.IsZero() && f.Kind() != reflect.Slice {
			panic("evidence field " + v.Type().Field(i).Name + " left unset: teach everyField its kind")
		}
	}
	ev.Usage[0] = plan.UsagePoint{Start: time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC), P90: 1, Max: 2}
	ev.Capped = []string{"maxAllowed"}
	return ev
}

// TestParkEvidence checks that the evidence parked while rendering comes
// back as it was, in every resource, and is out of the plan meanwhile.
func TestParkEvidence(t *testing.T) {
	p := parkedPlan()
	want := parkedPlan()
	parked := parkEvidence(p)
	if parked == nil {
		t.Fatal("the evidence was not parked")
	}
	for r := range resourcesOf(p) {
		if r.Evidence != nil {
			t.Errorf("%s still holds its evidence while parked", r.Resource)
		}
	}
	if err := parked.restore(p); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("restored plan differs from the one parked:\n got %+v\nwant %+v", p.Items, want.Items)
	}
}

// TestParkEvidenceRefused checks that evidence JSON cannot hold stays in
// the plan, and that a plan other than the one parked is refused.
func TestParkEvidenceRefused(t *testing.T) {
	p := parkedPlan()
	p.Items[3].Containers[0].Resources[0].Evidence.RawValue = math.NaN()
	if parked := parkEvidence(p); parked != nil {
		t.Fatal("evidence with NaN was parked")
	}
	if ev := p.Items[1].Containers[0].Resources[0].Evidence; ev == nil || ev.Samples != 10080 {
		t.Errorf("evidence left in the plan = %+v, want all of it", ev)
	}

	for _, tc := range []struct {
		name   string
		change func(*plan.Plan)
		want   string
	}{
		{name: "a resource more", change: func(p *plan.Plan) {
			p.Items[2].Containers = []plan.Container{{Name: "x", Resources: []plan.Resource{{Resource: "cpu"}}}}
		}, want: "restoring the evidence of resource 5"},
		{name: "a resource less", change: func(p *plan.Plan) { p.Items = p.Items[:3] }, want: "5 resources parked, 4 in the plan"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := parkedPlan()
			parked := parkEvidence(p)
			tc.change(p)
			err := parked.restore(p)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("restore = %v, want an error with %q", err, tc.want)
			}
		})
	}
}
