package bench

import (
	"encoding/json"
	"testing"
)

func TestCompareValues(t *testing.T) {
	report := func(t *testing.T, s string) Report {
		t.Helper()
		var r Report
		if err := json.Unmarshal([]byte(s), &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	const stateless = `{"resourceRecommends":[{"namespace":"a","name":"w","containers":[{"name":"app","resources":[
		{"resource":"cpu","recommended":"390m"},{"resource":"memory","recommended":"260Mi"}]}]}]}`
	for _, tc := range []struct {
		name           string
		warm           string
		values, differ int
	}{
		{"same", stateless, 2, 0},
		{"one differs", `{"resourceRecommends":[{"namespace":"a","name":"w","containers":[{"name":"app","resources":[
			{"resource":"cpu","recommended":"400m"},{"resource":"memory","recommended":"260Mi"}]}]}]}`, 2, 1},
		{"missing from the stateless run", `{"resourceRecommends":[{"namespace":"b","name":"w","containers":[{"name":"app","resources":[
			{"resource":"cpu","recommended":"390m"}]}]}]}`, 1, 1},
		{"no value is not counted", `{"resourceRecommends":[{"namespace":"a","name":"w","containers":[{"name":"app","resources":[
			{"resource":"cpu","recommended":""}]}]}]}`, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			values, differ := compareValues(report(t, tc.warm), report(t, stateless))
			if values != tc.values || differ != tc.differ {
				t.Errorf("compareValues = %d values, %d differ; want %d, %d", values, differ, tc.values, tc.differ)
			}
		})
	}
}
