package main

import (
	"context"
	"crypto"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"

	"github.com/recommend-job/recommend-job/internal/config"
)

// emptyMatrix is a range query's answer without series.
const emptyMatrix = `{"status":"success","data":{"resultType":"matrix","result":[]}}`

// queryThrough sends one range query through the client cfg configures
// and returns its error.
func queryThrough(t *testing.T, cfg *config.Config) error {
	t.Helper()
	api, err := newPrometheusAPI(cfg)
	if err != nil {
		return err
	}
	_, _, _, err = api.QueryRange(context.Background(), `up{namespace="shop"}`, promv1.Range{Start: time.Unix(1700000000, 0), End: time.Unix(1700003600, 0), Step: time.Minute})
	return err
}

// apiStub is a query API that answers an empty matrix to requests check
// accepts, and 401 to others, as a managed service does.
func apiStub(t *testing.T, check func(r *http.Request, body []byte) error) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := check(r, body); err != nil {
			t.Errorf("the API refused the request: %v", err)
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, emptyMatrix)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func bearer(token string) func(*http.Request, []byte) error {
	return func(r *http.Request, _ []byte) error {
		if got := r.Header.Get("Authorization"); got != "Bearer "+token {
			return fmt.Errorf("Authorization %q, want the token endpoint's", got)
		}
		return nil
	}
}

// TestOAuth2ClientCredentials checks the client credentials grant against
// a token endpoint that checks the client as Microsoft Entra ID does, and
// that the token reaches the API; a refused secret is not quoted.
func TestOAuth2ClientCredentials(t *testing.T) {
	const id, secret, scope = "job-client", "s3cret-value", "https://prometheus.monitor.azure.com/.default"
	refuse := false
	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			t.Error(err)
		}
		user, pass, basic := r.BasicAuth()
		if !basic {
			user, pass = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
		}
		if refuse || r.Method != http.MethodPost || r.PostForm.Get("grant_type") != "client_credentials" ||
			user != id || pass != secret || r.PostForm.Get("scope") != scope {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error":"invalid_client"}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"access_token":"azure-token","token_type":"Bearer","expires_in":3600}`)
	}))
	defer tokens.Close()
	secretFile := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secretFile, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	api := apiStub(t, bearer("azure-token"))
	cfg := &config.Config{PrometheusURL: api.URL, PrometheusOAuth2TokenURL: tokens.URL, PrometheusOAuth2ClientID: id,
		PrometheusOAuth2ClientSecretFile: secretFile, PrometheusOAuth2Scopes: []string{scope}}
	if err := queryThrough(t, cfg); err != nil {
		t.Fatalf("query with OAuth2 client credentials: %v", err)
	}
	refuse = true
	cfg.PrometheusOAuth2Scopes = []string{scope} // a new client, a new token
	err := queryThrough(t, cfg)
	if err == nil || strings.Contains(err.Error(), secret) {
		t.Errorf("query with a refused secret: error %v, want one that does not quote the secret", err)
	}
}

// TestSigV4 checks the signature of each request as Amazon Managed
// Service for Prometheus does, with credentials from the environment as
// the AWS SDK finds them.
func TestSigV4(t *testing.T) {
	const keyID, secret, region = "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "eu-west-1"
	dir := t.TempDir()
	t.Setenv("AWS_ACCESS_KEY_ID", keyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	api := apiStub(t, func(r *http.Request, body []byte) error { return verifySigV4(r, body, keyID, secret, region, "aps") })
	if err := queryThrough(t, &config.Config{PrometheusURL: api.URL, PrometheusSigV4Region: region}); err != nil {
		t.Fatalf("query signed with SigV4: %v", err)
	}
	// Another secret signs differently: the stub's check can fail.
	t.Setenv("AWS_SECRET_ACCESS_KEY", "another")
	refused := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if verifySigV4(r, body, keyID, secret, region, "aps") == nil {
			t.Error("a signature of another secret was accepted")
		}
		http.Error(w, "signature mismatch", http.StatusForbidden)
	}))
	defer refused.Close()
	if err := queryThrough(t, &config.Config{PrometheusURL: refused.URL, PrometheusSigV4Region: region}); err == nil || strings.Contains(err.Error(), "another") {
		t.Errorf("query with the wrong secret: error %v, want one that does not quote it", err)
	}
}

// verifySigV4 checks r's Authorization as AWS does: the canonical request
// of the signed headers, the string to sign of its scope, and the HMAC
// chain of the secret.
func verifySigV4(r *http.Request, body []byte, keyID, secret, region, service string) error {
	auth := r.Header.Get("Authorization")
	fields := map[string]string{}
	rest, ok := strings.CutPrefix(auth, "AWS4-HMAC-SHA256 ")
	if !ok {
		return fmt.Errorf("authorization %q is no SigV4", auth)
	}
	for _, f := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(f), "=")
		fields[k] = v
	}
	amzDate := r.Header.Get("X-Amz-Date")
	if len(amzDate) < 8 {
		return fmt.Errorf("X-Amz-Date %q", amzDate)
	}
	scope := strings.Join([]string{amzDate[:8], region, service, "aws4_request"}, "/")
	if fields["Credential"] != keyID+"/"+scope {
		return fmt.Errorf("credential %q, want %s/%s", fields["Credential"], keyID, scope)
	}
	signed := strings.Split(fields["SignedHeaders"], ";")
	if !sort.StringsAreSorted(signed) || !contains(signed, "host") || !contains(signed, "x-amz-date") {
		return fmt.Errorf("signed headers %q", fields["SignedHeaders"])
	}
	var headers strings.Builder
	for _, h := range signed {
		var v string
		switch h {
		case "host":
			v = r.Host
		case "content-length":
			v = strconv.FormatInt(r.ContentLength, 10)
		default:
			v = strings.Join(r.Header.Values(h), ",")
		}
		headers.WriteString(h + ":" + strings.TrimSpace(v) + "\n")
	}
	sum := sha256.Sum256(body)
	query, _ := url.ParseQuery(r.URL.RawQuery)
	keys := make([]string, 0, len(query))
	for k := range query {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var q []string
	for _, k := range keys {
		for _, v := range query[k] {
			q = append(q, strings.ReplaceAll(url.QueryEscape(k), "+", "%20")+"="+strings.ReplaceAll(url.QueryEscape(v), "+", "%20"))
		}
	}
	canonical := strings.Join([]string{r.Method, r.URL.EscapedPath(), strings.Join(q, "&"), headers.String(), fields["SignedHeaders"], hex.EncodeToString(sum[:])}, "\n")
	creq := sha256.Sum256([]byte(canonical))
	toSign := "AWS4-HMAC-SHA256\n" + amzDate + "\n" + scope + "\n" + hex.EncodeToString(creq[:])
	key := []byte("AWS4" + secret)
	for _, part := range []string{amzDate[:8], region, service, "aws4_request"} {
		key = hmacSHA256(key, part)
	}
	if want := hex.EncodeToString(hmacSHA256(key, toSign)); !hmac.Equal([]byte(want), []byte(fields["Signature"])) {
		return fmt.Errorf("signature does not match the canonical request:\n%s", canonical)
	}
	return nil
}

func hmacSHA256(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// TestGoogleApplicationDefaultCredentials checks that a service account
// key file in $GOOGLE_APPLICATION_CREDENTIALS is exchanged for a token at
// its token_uri, with an assertion signed by its key, as Google's token
// endpoint checks it, and that the token reaches the API.
func TestGoogleApplicationDefaultCredentials(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	const email = "recommend-job@project.iam.gserviceaccount.com"
	var tokenURI string
	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			t.Error(err)
		}
		if err := verifyAssertion(r.PostForm, &key.PublicKey, email, tokenURI); err != nil {
			t.Errorf("token endpoint: %v", err)
			http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"access_token":"google-token","token_type":"Bearer","expires_in":3600}`)
	}))
	defer tokens.Close()
	tokenURI = tokens.URL + "/token"
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	account, _ := json.Marshal(map[string]string{"type": "service_account", "project_id": "project", "private_key_id": "k1",
		"private_key": string(keyPEM), "client_email": email, "client_id": "1", "token_uri": tokenURI})
	file := filepath.Join(t.TempDir(), "account.json")
	if err := os.WriteFile(file, account, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", file)
	api := apiStub(t, bearer("google-token"))
	if err := queryThrough(t, &config.Config{PrometheusURL: api.URL, PrometheusGoogleCredentials: true}); err != nil {
		t.Fatalf("query with application default credentials: %v", err)
	}
}

// verifyAssertion checks a JWT bearer grant as Google's token endpoint
// does: RS256 by the account's key, issued by it, for the token endpoint,
// with the monitoring scope, and not expired.
func verifyAssertion(form url.Values, pub *rsa.PublicKey, email, audience string) error {
	if form.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
		return fmt.Errorf("grant_type %q", form.Get("grant_type"))
	}
	parts := strings.Split(form.Get("assertion"), ".")
	if len(parts) != 3 {
		return fmt.Errorf("assertion is no JWT")
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return err
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(pub, crypto.SHA256, digest[:], sig); err != nil {
		return fmt.Errorf("signature: %w", err)
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return err
	}
	var claims struct {
		Iss   string `json:"iss"`
		Aud   string `json:"aud"`
		Scope string `json:"scope"`
		Exp   int64  `json:"exp"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		return err
	}
	if claims.Iss != email || claims.Aud != audience || !strings.Contains(claims.Scope, googleMonitoringRead) || claims.Exp < time.Now().Unix() {
		return fmt.Errorf("claims %+v", claims)
	}
	return nil
}
