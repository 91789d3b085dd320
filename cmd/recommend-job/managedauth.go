package main

import (
	"context"
	"fmt"
	"net/http"

	"github.com/prometheus/sigv4"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"

	"github.com/recommend-job/recommend-job/internal/config"
)

// googleMonitoringRead is the scope of Google Cloud Managed Service for
// Prometheus' query API.
const googleMonitoringRead = "https://www.googleapis.com/auth/monitoring.read"

// managedAuth wraps next with the authentication of a managed service the
// configuration names: AWS SigV4 or Google's application default
// credentials (OAuth2 client credentials are prometheus/common's, in the
// client's configuration). Its errors never quote a credential: those of
// the SDKs name what was missing, not what was found.
func managedAuth(c *config.Config, next http.RoundTripper) (http.RoundTripper, error) {
	ctx := context.Background()
	switch {
	case c.PrometheusSigV4Region != "":
		rt, err := sigv4.NewSigV4RoundTripper(&sigv4.SigV4Config{Region: c.PrometheusSigV4Region, RoleARN: c.PrometheusSigV4RoleARN}, next,
			sigv4.WithContext(ctx))
		if err != nil {
			return nil, fmt.Errorf("prometheus-sigv4-region: %w", err)
		}
		return rt, nil
	case c.PrometheusGoogleCredentials:
		// The token source asks for a new token before the old one
		// expires, through the client's own transport.
		tctx := context.WithValue(ctx, oauth2.HTTPClient, &http.Client{Transport: next})
		creds, err := google.FindDefaultCredentials(tctx, googleMonitoringRead)
		if err != nil {
			return nil, fmt.Errorf("prometheus-google-credentials: %w", err)
		}
		return &oauth2.Transport{Source: creds.TokenSource, Base: next}, nil
	}
	return next, nil
}
