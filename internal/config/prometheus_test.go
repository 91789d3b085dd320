package config

import (
	"strings"
	"testing"
	"time"

	"github.com/recommend-job/recommend-job/internal/recommend"
)

func TestCompletePrometheus(t *testing.T) {
	valid := func() Config {
		return Config{PrometheusURL: "https://prometheus.example", Window: 7 * 24 * time.Hour, PrometheusStep: "auto", PrometheusRateWindow: "5m", PrometheusTimeout: 2 * time.Minute, HalfLife: 24 * time.Hour,
			PrometheusConcurrency: 4, MemoryPeakInterval: time.Hour, StartupWindow: 5 * time.Minute, Percentile: 0.9, MinSamples: 12, ChangeThreshold: 0.1}
	}
	tests := []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"valid", func(*Config) {}, ""},
		{"token and basic", func(c *Config) { c.PrometheusBearerToken, c.PrometheusUsername = "s3cr3t", "u" },
			"prometheus-username: basic authentication and a bearer token exclude each other"},
		{"bad header", func(c *Config) { c.PrometheusHeaders = []string{"no value"} },
			`prometheus-headers: want Name=value, got an entry named "no value"`},
		{"authorization header", func(c *Config) { c.PrometheusHeaders = []string{"Authorization=Bearer s3cr3t"} },
			"prometheus-headers: set Authorization through prometheus-bearer-token or prometheus-username"},
		{"header the client sets", func(c *Config) { c.PrometheusHeaders = []string{"user-agent=s3cr3t"} },
			`prometheus-headers: setting header "User-Agent" is not allowed`},
		{"no url", func(c *Config) { c.PrometheusURL = "" }, "prometheus-url: required"},
		{"braces in the filter", func(c *Config) { c.PrometheusLabelFilter = `{cluster="a"}` },
			`prometheus-label-filter: must be label matchers without braces, e.g. cluster="prod"`},
		{"percentile", func(c *Config) { c.Percentile = 90 }, "percentile: must be a number in [0.5, 1], got 90"},
		{"percentile below the median", func(c *Config) { c.Percentile = 0.3 }, "percentile: must be a number in [0.5, 1], got 0.3"},
		{"half-life too long", func(c *Config) { c.HalfLife = 8760 * time.Hour }, "half-life: must be between 1h and 720h, got 8760h"},
		{"threshold", func(c *Config) { c.ChangeThreshold = 1 }, "change-threshold: must be in [0, 1), got 1"},
		{"step set", func(c *Config) { c.PrometheusStep = "1m" }, ""},
		{"step neither auto nor a duration", func(c *Config) { c.PrometheusStep = "fine" },
			`prometheus-step: "fine": want auto or a duration such as 1m: time: invalid duration "fine"`},
		{"rate window not positive", func(c *Config) { c.PrometheusRateWindow = "0s" }, "prometheus-rate-window: must be positive, got 0s"},
		{"query timeout", func(c *Config) { c.PrometheusTimeout = 0 }, "prometheus-timeout: must be positive, got 0s"},
		{"no namespace read at a time", func(c *Config) { c.PrometheusConcurrency = 0 }, "prometheus-concurrency: must be at least 1, got 0"},
		{"peak interval", func(c *Config) { c.MemoryPeakInterval = 0 }, "memory-peak-interval: must be a whole number of minutes between 1m and 24h, got 0s"},
		{"peak interval not whole minutes", func(c *Config) { c.MemoryPeakInterval = 90 * time.Second },
			"memory-peak-interval: must be a whole number of minutes between 1m and 24h, got 1m30s"},
		{"startup window off", func(c *Config) { c.StartupWindow = 0 }, ""},
		{"startup window negative", func(c *Config) { c.StartupWindow = -time.Minute }, "startup-window: must be between 0 and 1h, got -1m0s"},
		{"startup window past an hour", func(c *Config) { c.StartupWindow = 2 * time.Hour }, "startup-window: must be between 0 and 1h, got 2h0m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := valid()
			tt.change(&c)
			var msgs []string
			for _, err := range c.completePrometheus() {
				msgs = append(msgs, err.Error())
			}
			if got := strings.Join(msgs, "; "); got != tt.want {
				t.Errorf("completePrometheus() = %q, want %q", got, tt.want)
			}
			if strings.Contains(strings.Join(msgs, ""), "s3cr3t") {
				t.Errorf("an error quotes the credential: %v", msgs)
			}
		})
	}
}

// TestPrometheusHTTP checks what reaches the client's configuration: each
// authentication key where the client reads it, headers as secrets under
// their canonical names, the environment's proxy.
func TestPrometheusHTTP(t *testing.T) {
	tests := []struct {
		name  string
		cfg   Config
		check func(t *testing.T, c Config, got string)
	}{
		{name: "bearer token file", cfg: Config{PrometheusBearerTokenFile: "/var/run/token"}, check: func(t *testing.T, c Config, _ string) {
			hc, _ := c.PrometheusHTTP()
			if hc.Authorization == nil || hc.Authorization.Type != "Bearer" || hc.Authorization.CredentialsFile != "/var/run/token" || hc.BasicAuth != nil {
				t.Errorf("authorization = %+v, basic auth = %+v, want the bearer token's file", hc.Authorization, hc.BasicAuth)
			}
		}},
		{name: "basic auth with a password file", cfg: Config{PrometheusUsername: "admin", PrometheusPasswordFile: "/var/run/password"}, check: func(t *testing.T, c Config, _ string) {
			hc, _ := c.PrometheusHTTP()
			if hc.BasicAuth == nil || hc.BasicAuth.Username != "admin" || hc.BasicAuth.PasswordFile != "/var/run/password" || hc.Authorization != nil {
				t.Errorf("basic auth = %+v, authorization = %+v, want admin and the password's file", hc.BasicAuth, hc.Authorization)
			}
		}},
		{name: "headers, TLS and proxy", cfg: Config{PrometheusHeaders: []string{"x-scope-orgid=s3cr3t", "X-Extra=1", "X-Extra=2"}, PrometheusCAFile: "/ca.pem", PrometheusInsecureSkipVerify: true},
			check: func(t *testing.T, c Config, printed string) {
				hc, _ := c.PrometheusHTTP()
				if hc.HTTPHeaders == nil || len(hc.HTTPHeaders.Headers["X-Scope-Orgid"].Secrets) != 1 || len(hc.HTTPHeaders.Headers["X-Extra"].Secrets) != 2 {
					t.Errorf("headers = %+v, want X-Scope-Orgid once and X-Extra twice", hc.HTTPHeaders)
				}
				if hc.TLSConfig.CAFile != "/ca.pem" || !hc.TLSConfig.InsecureSkipVerify || !hc.ProxyFromEnvironment || !hc.FollowRedirects {
					t.Errorf("TLS = %+v, proxy from environment %v, follow redirects %v", hc.TLSConfig, hc.ProxyFromEnvironment, hc.FollowRedirects)
				}
				if strings.Contains(printed, "s3cr3t") {
					t.Errorf("the configuration prints a header's value:\n%s", printed)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hc, err := tt.cfg.PrometheusHTTP()
			if err != nil {
				t.Fatalf("PrometheusHTTP() error = %v", err)
			}
			tt.check(t, tt.cfg, hc.String())
		})
	}
	if _, err := (&Config{PrometheusHeaders: []string{"Authorization=Bearer s3cr3t"}}).PrometheusHTTP(); err == nil || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("PrometheusHTTP() with an Authorization header: error = %v, want one that does not quote it", err)
	}
}

func TestCompletePrometheusParsesResolution(t *testing.T) {
	tests := []struct {
		step, rate         string
		wantStep, wantRate time.Duration
	}{
		{"auto", "auto", 0, 0},
		{"1m", "auto", time.Minute, 0},
		{" 30s ", "2m", 30 * time.Second, 2 * time.Minute},
	}
	for _, tt := range tests {
		c := Config{PrometheusURL: "https://prometheus.example", Window: 7 * 24 * time.Hour, PrometheusStep: tt.step, PrometheusRateWindow: tt.rate,
			PrometheusTimeout: time.Minute, HalfLife: 24 * time.Hour, PrometheusConcurrency: 1, MemoryPeakInterval: time.Hour, Percentile: 0.9, MinSamples: 1}
		if errs := c.completePrometheus(); len(errs) > 0 {
			t.Fatalf("step %q, rate window %q: %v", tt.step, tt.rate, errs)
		}
		if c.Parsed.PrometheusStep != tt.wantStep || c.Parsed.PrometheusRateWindow != tt.wantRate {
			t.Errorf("step %q, rate window %q parsed as %s and %s, want %s and %s (zero: auto)", tt.step, tt.rate,
				c.Parsed.PrometheusStep, c.Parsed.PrometheusRateWindow, tt.wantStep, tt.wantRate)
		}
	}
}

// TestAlgorithmChangeThreshold checks what change-threshold becomes for
// the algorithm: 0 writes every change (recommend.EveryChange, which the
// algorithm's defaults keep), any other value is itself.
func TestAlgorithmChangeThreshold(t *testing.T) {
	for _, tc := range []struct {
		setting, want float64
	}{
		{0, recommend.EveryChange},
		{0.1, 0.1},
		{0.25, 0.25},
	} {
		got := (&Config{ChangeThreshold: tc.setting}).Algorithm().WithDefaults().ChangeThreshold
		if got != tc.want {
			t.Errorf("change-threshold %v: the algorithm's threshold is %v, want %v", tc.setting, got, tc.want)
		}
	}
}
