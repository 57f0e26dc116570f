package api_test

import "crypto/tls"

// insecureTLS trusts httptest's self-signed certificate.
func insecureTLS() *tls.Config { return &tls.Config{InsecureSkipVerify: true} }
