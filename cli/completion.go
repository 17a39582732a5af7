package cli

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"github.com/openctl/openctl/state"
)

// Shell completion: cobra's "openctl completion bash|zsh|fish|powershell"
// scripts call back into openctl; these functions answer with kind names
// and with the names the state records (no provider is contacted, and no
// secret is opened). Failures complete nothing.

// completeKinds returns the kind names users type.
func (a *app) completeKinds() []string {
	reg, err := a.offlineRegistry()
	if err != nil {
		return nil
	}
	var out []string
	for _, k := range reg.Kinds() {
		out = append(out, typedName(k.Kind))
		if k.Plural != "" {
			out = append(out, k.Plural)
		}
	}
	return out
}

// completeKindAndNames completes "KIND NAME...".
func (a *app) completeKindAndNames(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) == 0 {
		return a.completeKinds(), cobra.ShellCompDirectiveNoFileComp
	}
	return a.completeNames(cmd.Context(), args[0]), cobra.ShellCompDirectiveNoFileComp
}

// completeNames returns the names of the recorded resources of a kind.
func (a *app) completeNames(ctx context.Context, kind string) []string {
	kr, err := a.resolveKind(kind)
	if err != nil {
		return nil
	}
	recs := a.recordsForCompletion(ctx, state.Filter{Group: kr.Group, Kind: kr.Kind.Kind})
	out := make([]string, 0, len(recs))
	for _, r := range recs {
		out = append(out, r.Name)
	}
	return out
}

// completeRefs completes "KIND/NAME" from the state.
func (a *app) completeRefs(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	var out []string
	for _, r := range a.recordsForCompletion(cmd.Context(), state.Filter{}) {
		ref := strings.ToLower(r.Kind) + "/" + r.Name
		if kr, err := a.resolveKind(r.Kind); err == nil {
			ref = typedName(kr.Kind) + "/" + r.Name
		}
		if strings.HasPrefix(ref, toComplete) {
			out = append(out, ref)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

func (a *app) recordsForCompletion(ctx context.Context, f state.Filter) []*state.Record {
	if ctx == nil {
		ctx = context.Background()
	}
	s, err := a.openStore(ctx)
	if err != nil {
		return nil
	}
	defer s.close()
	recs, err := s.engine.Records(ctx, f)
	if err != nil {
		return nil
	}
	return recs
}
