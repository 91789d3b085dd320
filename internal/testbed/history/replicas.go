package history

import (
	"strings"
	"time"

	"github.com/recommend-job/recommend-job/internal/testbed"
)

// Replicas is kube-state-metrics' replica count of a workload of kind
// (Deployment, StatefulSet; a DaemonSet's desired pods), value at each
// scrape at interval from start to end.
func Replicas(namespace, kind, name string, value func(time.Time) float64, start, end time.Time, interval time.Duration) testbed.Series {
	label := strings.ToLower(kind)
	metric := "kube_" + label + "_status_replicas"
	if kind == "DaemonSet" {
		metric = "kube_daemonset_status_desired_number_scheduled"
	}
	s := testbed.Series{Name: metric, Labels: map[string]string{"namespace": namespace, label: name, "job": "kube-state-metrics"}}
	for t := start; !t.After(end); t = t.Add(interval) {
		s.Samples = append(s.Samples, testbed.Sample{Time: t, Value: value(t)})
	}
	return s
}
