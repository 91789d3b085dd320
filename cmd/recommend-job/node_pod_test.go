//go:build integration

package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/recommend-job/recommend-job/internal/memlimit"
)

// assertAimsBelowLimit checks that the job in pod logged a garbage
// collector's aim derived from the memory limit of its container.
func assertAimsBelowLimit(t *testing.T, r *nodeRun, pod corev1.Pod) {
	t.Helper()
	limit := pod.Spec.Containers[0].Resources.Limits.Memory().Value()
	if limit == 0 {
		t.Fatalf("the chart's container has no memory limit: %+v", pod.Spec.Containers[0].Resources)
	}
	var aims []string
	for _, log := range podLogFiles(r.node, chartNamespace, pod.Labels["job-name"]) {
		for line := range strings.Lines(log) {
			// time stream tag line
			fields := strings.SplitN(line, " ", 4)
			if len(fields) < 4 {
				continue
			}
			var aim struct {
				Msg            string `json:"msg"`
				ContainerLimit int64  `json:"containerLimit"`
				RenderMemory   int64  `json:"renderMemory"`
				GCLimit        int64  `json:"gcLimit"`
			}
			if json.Unmarshal([]byte(fields[3]), &aim) != nil || aim.Msg != "the garbage collector aims below the container's memory limit" {
				continue
			}
			aims = append(aims, fields[3])
			want, ok := memlimit.Soft(limit, aim.RenderMemory)
			if aim.ContainerLimit != limit || !ok || aim.GCLimit != want {
				t.Errorf("the job aims at %d below a limit of %d, want %d below the container's %d: %s", aim.GCLimit, aim.ContainerLimit, want, limit, fields[3])
			}
		}
	}
	if len(aims) != 1 {
		t.Errorf("the job logged its garbage collector's aim %d times, want once:\n%s", len(aims), podLogs(r.node, chartNamespace, pod.Labels["job-name"]))
	}
}

// assertServiceAccountDenied checks, with a token of the chart's
// ServiceAccount, that it lists what the chart grants and is refused
// what it does not: writing a workload, reading a Secret, writing
// outside its namespace.
func assertServiceAccountDenied(ctx context.Context, t *testing.T, r *nodeRun) {
	t.Helper()
	token, err := r.client.CoreV1().ServiceAccounts(chartNamespace).CreateToken(ctx, "recommend-job",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a token of the chart's ServiceAccount: %v", err)
	}
	cfg := rest.AnonymousClientConfig(r.bed.APIServer.RESTConfig())
	cfg.BearerToken = token.Status.Token
	sa, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sa.AppsV1().Deployments("shop").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("the ServiceAccount lists Deployments: %v, want allowed, as the chart grants", err)
	}
	denied := []struct {
		name string
		do   func() error
	}{
		{"create a Deployment", func() error {
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "intruder", Namespace: "shop"}}
			_, err := sa.AppsV1().Deployments("shop").Create(ctx, d, metav1.CreateOptions{})
			return err
		}},
		{"patch a Deployment", func() error {
			_, err := sa.AppsV1().Deployments("shop").Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"replicas":9}}`), metav1.PatchOptions{})
			return err
		}},
		{"read its own git token's Secret", func() error {
			_, err := sa.CoreV1().Secrets(chartNamespace).Get(ctx, "recommend-job-git", metav1.GetOptions{})
			return err
		}},
		{"list a tenant's Secrets", func() error {
			_, err := sa.CoreV1().Secrets("shop").List(ctx, metav1.ListOptions{})
			return err
		}},
		{"write a ConfigMap in a tenant's namespace", func() error {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "recommend-job-record", Namespace: "shop"}}
			_, err := sa.CoreV1().ConfigMaps("shop").Create(ctx, cm, metav1.CreateOptions{})
			return err
		}},
	}
	for _, d := range denied {
		if err := d.do(); !apierrors.IsForbidden(err) {
			t.Errorf("the chart's ServiceAccount may %s: %v, want 403 Forbidden", d.name, err)
		}
	}
}
