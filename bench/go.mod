module github.com/openctl/openctl/bench

go 1.26.0

require (
	github.com/openctl/openctl v0.0.0
	gonum.org/v1/gonum v0.17.0
)

replace github.com/openctl/openctl => ../
