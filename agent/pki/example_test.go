package pki_test

import (
	"crypto/x509"
	"fmt"
	"net"

	"github.com/openctl/openctl/agent/pki"
)

// A cluster's certificates: one CA, a server certificate for a node and
// the controller's client certificate.
func Example() {
	ca, err := pki.NewCA("openctl dev CA")
	if err != nil {
		panic(err)
	}
	srv, err := ca.IssueServer("dev-cp-0", []net.IP{net.ParseIP("192.168.1.50")})
	if err != nil {
		panic(err)
	}
	cli, err := ca.IssueClient(pki.ControllerName)
	if err != nil {
		panic(err)
	}
	accepted := pki.NewBundle(ca.Cert)

	_, err = srv.Cert.Verify(x509.VerifyOptions{
		Roots:     accepted.Pool(),
		DNSName:   "192.168.1.50",
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	fmt.Println("server:", srv.Cert.DNSNames, srv.Cert.IPAddresses, err)

	_, err = cli.Cert.Verify(x509.VerifyOptions{
		Roots:     accepted.Pool(),
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	fmt.Println("client:", cli.Cert.Subject.CommonName, err)

	// A server certificate cannot be used as a client certificate.
	_, err = srv.Cert.Verify(x509.VerifyOptions{
		Roots:     accepted.Pool(),
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	fmt.Println("server as client:", err != nil)
	// Output:
	// server: [dev-cp-0] [192.168.1.50] <nil>
	// client: openctl-controller <nil>
	// server as client: true
}

// Replacing a cluster's CA without a flag day.
func ExampleRotate() {
	oldCA, _ := pki.NewCA("openctl dev CA")
	oldClient, _ := oldCA.IssueClient(pki.ControllerName)
	accepted := pki.NewBundle(oldCA.Cert)

	accepts := func(b pki.Bundle, l *pki.Leaf) bool {
		_, err := l.Cert.Verify(x509.VerifyOptions{
			Roots:     b.Pool(),
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		})
		return err == nil
	}

	// 1. Introduce the new CA next to the old one.
	newCA, overlap, err := pki.Rotate(accepted, "openctl dev CA")
	if err != nil {
		panic(err)
	}
	// 2. Reissue leaves from the new CA; both generations are accepted.
	newClient, _ := newCA.IssueClient(pki.ControllerName)
	fmt.Println("overlap:", overlap.Len(), accepts(overlap, oldClient), accepts(overlap, newClient))

	// 3. Drop the old CA.
	final := overlap.Without(oldCA.Cert)
	fmt.Println("final:", final.Len(), accepts(final, oldClient), accepts(final, newClient))
	// Output:
	// overlap: 2 true true
	// final: 1 false true
}
