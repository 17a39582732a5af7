// Package providertest is the conformance kit every provider runs, and a
// [Fake] provider for tests of code built on the engine.
//
//	func TestConformance(t *testing.T) {
//		p := myprovider.New(cfg)
//		providertest.RunConformance(t, p, providertest.Options{
//			NewResource: func(name string) *manifest.Resource { ... a valid manifest ... },
//		})
//	}
package providertest
