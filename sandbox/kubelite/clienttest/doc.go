// Package clienttest tests package kubelite with the client-go machinery
// whose module requirements (k8s.io/client-go/tools/cache needs
// github.com/pmezard/go-difflib) or weight (the kubectl command) the root
// module does not carry: informers, leader election, and the real kubectl
// command run in process. It is a nested module: run its tests with
// `cd sandbox/kubelite/clienttest && go test -race .`.
package clienttest
