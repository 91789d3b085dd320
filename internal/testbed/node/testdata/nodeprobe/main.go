// Command nodeprobe is the node test's workload. It reports, on its
// termination log, the user it runs as, whether its root filesystem is
// read-only, and who the apiserver says its ServiceAccount token is,
// asked through the kubernetes Service as client-go's in-cluster
// configuration would. It needs nothing but the standard library.
package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"syscall"
	"time"
)

const serviceAccount = "/var/run/secrets/kubernetes.io/serviceaccount/"

func main() {
	report, err := probe()
	if err != nil {
		report += "error: " + err.Error() + "\n"
	}
	fmt.Print(report)
	_ = os.WriteFile("/dev/termination-log", []byte(report), 0o644)
	if err != nil {
		os.Exit(1)
	}
}

func probe() (string, error) {
	report := fmt.Sprintf("uid=%d gid=%d\n", os.Getuid(), os.Getgid())
	if err := os.WriteFile("/probe", nil, 0o644); errors.Is(err, syscall.EROFS) {
		report += "root filesystem: read-only\n"
	} else {
		return report, fmt.Errorf("writing to / gave %v, want a read-only file system", err)
	}
	host := net.JoinHostPort(os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT"))
	report += "apiserver: " + host + "\n"
	user, err := whoAmI(host)
	if err != nil {
		return report, err
	}
	return report + "user: " + user + "\n", nil
}

// whoAmI asks the apiserver at host who the pod's token is.
func whoAmI(host string) (string, error) {
	token, err := os.ReadFile(serviceAccount + "token")
	if err != nil {
		return "", err
	}
	ca, err := os.ReadFile(serviceAccount + "ca.crt")
	if err != nil {
		return "", err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return "", errors.New("no certificate in ca.crt")
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	body := []byte(`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`)
	req, err := http.NewRequest(http.MethodPost, "https://"+host+"/apis/authentication.k8s.io/v1/selfsubjectreviews", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+string(bytes.TrimSpace(token)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("self subject review: status %d: %s", resp.StatusCode, data)
	}
	var review struct {
		Status struct {
			UserInfo struct {
				Username string `json:"username"`
			} `json:"userInfo"`
		} `json:"status"`
	}
	if err := json.Unmarshal(data, &review); err != nil {
		return "", err
	}
	return review.Status.UserInfo.Username, nil
}
