package k3slite

import (
	"context"
	"encoding/json"
	"fmt"
)

// apiServers asks the supervisor for the cluster's servers.
func (c *supervisorClient) apiServers(ctx context.Context) ([]string, error) {
	body, err := c.get(ctx, "/v1-k3s/apiservers", nil)
	if err != nil {
		return nil, err
	}
	var list []string
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("%s/v1-k3s/apiservers: %w", c.url, err)
	}
	return list, nil
}
