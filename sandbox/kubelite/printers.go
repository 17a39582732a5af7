package kubelite

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
)

// printer is a kind's server-side printing: its columns and a row's cells,
// as the real apiserver's printers (pkg/printers/internalversion) make them.
type printer struct {
	columns []metav1.TableColumnDefinition
	cells   func(obj runtime.Object) []any
}

var (
	nameColumn = metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]}
	ageColumn  = metav1.TableColumnDefinition{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]}
)

func column(name, desc string, priority int32) metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: name, Type: "string", Priority: priority, Description: desc}
}

var printers = map[string]printer{
	"nodes": {[]metav1.TableColumnDefinition{nameColumn,
		column("Status", "The status of the node", 0),
		column("Roles", "The roles of the node", 0),
		ageColumn,
		column("Version", corev1.NodeSystemInfo{}.SwaggerDoc()["kubeletVersion"], 0),
		column("Internal-IP", corev1.NodeStatus{}.SwaggerDoc()["addresses"], 1),
		column("External-IP", corev1.NodeStatus{}.SwaggerDoc()["addresses"], 1),
		column("OS-Image", corev1.NodeSystemInfo{}.SwaggerDoc()["osImage"], 1),
		column("Kernel-Version", corev1.NodeSystemInfo{}.SwaggerDoc()["kernelVersion"], 1),
		column("Container-Runtime", corev1.NodeSystemInfo{}.SwaggerDoc()["containerRuntimeVersion"], 1),
	}, nodeCells},
	"pods": {[]metav1.TableColumnDefinition{nameColumn,
		column("Ready", "The aggregate readiness state of this pod for accepting traffic.", 0),
		column("Status", "The aggregate status of the containers in this pod.", 0),
		column("Restarts", "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.", 0),
		ageColumn,
		column("IP", corev1.PodStatus{}.SwaggerDoc()["podIP"], 1),
		column("Node", corev1.PodSpec{}.SwaggerDoc()["nodeName"], 1),
		column("Nominated Node", corev1.PodStatus{}.SwaggerDoc()["nominatedNodeName"], 1),
		column("Readiness Gates", corev1.PodSpec{}.SwaggerDoc()["readinessGates"], 1),
	}, podCells},
	"namespaces": {[]metav1.TableColumnDefinition{nameColumn, column("Status", "The status of the namespace", 0), ageColumn}, func(o runtime.Object) []any {
		ns := o.(*corev1.Namespace)
		return []any{ns.Name, string(ns.Status.Phase), age(ns.CreationTimestamp)}
	}},
	"leases": {[]metav1.TableColumnDefinition{nameColumn, column("Holder", coordinationv1.LeaseSpec{}.SwaggerDoc()["holderIdentity"], 0), ageColumn}, func(o runtime.Object) []any {
		l := o.(*coordinationv1.Lease)
		holder := ""
		if l.Spec.HolderIdentity != nil {
			holder = *l.Spec.HolderIdentity
		}
		return []any{l.Name, holder, age(l.CreationTimestamp)}
	}},
	"configmaps": {[]metav1.TableColumnDefinition{nameColumn, {Name: "Data", Type: "string", Description: corev1.ConfigMap{}.SwaggerDoc()["data"]}, ageColumn}, func(o runtime.Object) []any {
		c := o.(*corev1.ConfigMap)
		return []any{c.Name, int64(len(c.Data) + len(c.BinaryData)), age(c.CreationTimestamp)}
	}},
	"secrets": {[]metav1.TableColumnDefinition{nameColumn, column("Type", corev1.Secret{}.SwaggerDoc()["type"], 0), {Name: "Data", Type: "string", Description: corev1.Secret{}.SwaggerDoc()["data"]}, ageColumn}, func(o runtime.Object) []any {
		s := o.(*corev1.Secret)
		return []any{s.Name, string(s.Type), int64(len(s.Data)), age(s.CreationTimestamp)}
	}},
	"poddisruptionbudgets": {[]metav1.TableColumnDefinition{nameColumn,
		column("Min Available", "The minimum number of pods that must be available, either as an absolute number or a percentage.", 0),
		column("Max Unavailable", "The maximum number of pods that may be unavailable, either as an absolute number or a percentage.", 0),
		{Name: "Allowed Disruptions", Type: "integer", Description: "Calculated number of pods that may be disrupted at this time."},
		ageColumn,
	}, func(o runtime.Object) []any {
		p := o.(*policyv1.PodDisruptionBudget)
		minA, maxU := "N/A", "N/A"
		if p.Spec.MinAvailable != nil {
			minA = p.Spec.MinAvailable.String()
		}
		if p.Spec.MaxUnavailable != nil {
			maxU = p.Spec.MaxUnavailable.String()
		}
		return []any{p.Name, minA, maxU, int64(p.Status.DisruptionsAllowed), age(p.CreationTimestamp)}
	}},
}

func init() {
	containers := column("Containers", "Names of each container in the template.", 1)
	images := column("Images", "Images referenced by each container in the template.", 1)
	integer := func(name, desc string) metav1.TableColumnDefinition {
		return metav1.TableColumnDefinition{Name: name, Type: "integer", Description: desc}
	}
	printers["deployments"] = printer{[]metav1.TableColumnDefinition{nameColumn,
		column("Ready", "Number of the pod with ready state", 0),
		column("Up-to-date", appsv1.DeploymentStatus{}.SwaggerDoc()["updatedReplicas"], 0),
		column("Available", appsv1.DeploymentStatus{}.SwaggerDoc()["availableReplicas"], 0),
		ageColumn, containers, images, column("Selector", appsv1.DeploymentSpec{}.SwaggerDoc()["selector"], 1),
	}, func(o runtime.Object) []any {
		d := o.(*appsv1.Deployment)
		sel := "<invalid>"
		if s, err := metav1.LabelSelectorAsSelector(d.Spec.Selector); err == nil {
			sel = s.String()
		}
		names, imgs := containerCells(d.Spec.Template.Spec.Containers)
		return []any{d.Name, fmt.Sprintf("%d/%d", d.Status.ReadyReplicas, replicas(d.Spec.Replicas)), int64(d.Status.UpdatedReplicas), int64(d.Status.AvailableReplicas), age(d.CreationTimestamp), names, imgs, sel}
	}}
	printers["replicasets"] = printer{[]metav1.TableColumnDefinition{nameColumn,
		integer("Desired", appsv1.ReplicaSetSpec{}.SwaggerDoc()["replicas"]),
		integer("Current", appsv1.ReplicaSetStatus{}.SwaggerDoc()["replicas"]),
		integer("Ready", appsv1.ReplicaSetStatus{}.SwaggerDoc()["readyReplicas"]),
		ageColumn, containers, images, column("Selector", appsv1.ReplicaSetSpec{}.SwaggerDoc()["selector"], 1),
	}, func(o runtime.Object) []any {
		r := o.(*appsv1.ReplicaSet)
		names, imgs := containerCells(r.Spec.Template.Spec.Containers)
		return []any{r.Name, int64(replicas(r.Spec.Replicas)), int64(r.Status.Replicas), int64(r.Status.ReadyReplicas), age(r.CreationTimestamp), names, imgs, metav1.FormatLabelSelector(r.Spec.Selector)}
	}}
	printers["daemonsets"] = printer{[]metav1.TableColumnDefinition{nameColumn,
		integer("Desired", appsv1.DaemonSetStatus{}.SwaggerDoc()["desiredNumberScheduled"]),
		integer("Current", appsv1.DaemonSetStatus{}.SwaggerDoc()["currentNumberScheduled"]),
		integer("Ready", appsv1.DaemonSetStatus{}.SwaggerDoc()["numberReady"]),
		integer("Up-to-date", appsv1.DaemonSetStatus{}.SwaggerDoc()["updatedNumberScheduled"]),
		integer("Available", appsv1.DaemonSetStatus{}.SwaggerDoc()["numberAvailable"]),
		column("Node Selector", corev1.PodSpec{}.SwaggerDoc()["nodeSelector"], 0),
		ageColumn, containers, images, column("Selector", appsv1.DaemonSetSpec{}.SwaggerDoc()["selector"], 1),
	}, func(o runtime.Object) []any {
		d := o.(*appsv1.DaemonSet)
		st := d.Status
		names, imgs := containerCells(d.Spec.Template.Spec.Containers)
		return []any{d.Name, int64(st.DesiredNumberScheduled), int64(st.CurrentNumberScheduled), int64(st.NumberReady), int64(st.UpdatedNumberScheduled), int64(st.NumberAvailable),
			labels.FormatLabels(d.Spec.Template.Spec.NodeSelector), age(d.CreationTimestamp), names, imgs, metav1.FormatLabelSelector(d.Spec.Selector)}
	}}
	printers["services"] = printer{[]metav1.TableColumnDefinition{nameColumn,
		column("Type", corev1.ServiceSpec{}.SwaggerDoc()["type"], 0),
		column("Cluster-IP", corev1.ServiceSpec{}.SwaggerDoc()["clusterIP"], 0),
		column("External-IP", corev1.ServiceSpec{}.SwaggerDoc()["externalIPs"], 0),
		column("Port(s)", corev1.ServiceSpec{}.SwaggerDoc()["ports"], 0),
		ageColumn, column("Selector", corev1.ServiceSpec{}.SwaggerDoc()["selector"], 1),
	}, serviceCells}
}

func replicas(r *int32) int32 {
	if r == nil {
		return 1
	}
	return *r
}

func containerCells(cs []corev1.Container) (names, images string) {
	var n, i []string
	for _, c := range cs {
		n, i = append(n, c.Name), append(i, c.Image)
	}
	return strings.Join(n, ","), strings.Join(i, ",")
}

// serviceCells is printService of the real printers (wide).
func serviceCells(o runtime.Object) []any {
	svc := o.(*corev1.Service)
	ip := "<none>"
	if len(svc.Spec.ClusterIPs) > 0 {
		ip = svc.Spec.ClusterIPs[0]
	}
	external := "<unknown>"
	switch svc.Spec.Type {
	case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort:
		external = "<none>"
		if len(svc.Spec.ExternalIPs) > 0 {
			external = strings.Join(svc.Spec.ExternalIPs, ",")
		}
	case corev1.ServiceTypeLoadBalancer:
		set := map[string]bool{}
		for _, in := range svc.Status.LoadBalancer.Ingress {
			if in.IP != "" {
				set[in.IP] = true
			} else if in.Hostname != "" {
				set[in.Hostname] = true
			}
		}
		var lb []string
		for k := range set {
			lb = append(lb, k)
		}
		sort.Strings(lb)
		all := append(lb, svc.Spec.ExternalIPs...)
		external = strings.Join(all, ",")
		if len(all) == 0 {
			external = "<pending>"
		}
	case corev1.ServiceTypeExternalName:
		external = svc.Spec.ExternalName
	}
	var ports []string
	for _, p := range svc.Spec.Ports {
		if p.NodePort > 0 {
			ports = append(ports, fmt.Sprintf("%d:%d/%s", p.Port, p.NodePort, p.Protocol))
		} else {
			ports = append(ports, fmt.Sprintf("%d/%s", p.Port, p.Protocol))
		}
	}
	portStr := strings.Join(ports, ",")
	if portStr == "" {
		portStr = "<none>"
	}
	return []any{svc.Name, string(svc.Spec.Type), ip, external, portStr, age(svc.CreationTimestamp), labels.FormatLabels(svc.Spec.Selector)}
}

// defaultPrinter prints the name and age of any object.
var defaultPrinter = printer{[]metav1.TableColumnDefinition{nameColumn, ageColumn}, func(o runtime.Object) []any {
	m := metaOf(o)
	return []any{m.GetName(), age(m.GetCreationTimestamp())}
}}

// table is the metav1.Table of objs, each row with its object as
// includeObject asks: its metadata (Metadata, the default), all of it
// (Object) or nothing (None).
func table(res *resource, objs []runtime.Object, noHeaders bool, includeObject string) *metav1.Table {
	p, ok := printers[res.gvr.Resource]
	if !ok || res.gvr.Group == "events.k8s.io" {
		p = defaultPrinter
	}
	t := &metav1.Table{TypeMeta: metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/v1"}, Rows: []metav1.TableRow{}}
	if !noHeaders {
		t.ColumnDefinitions = p.columns
	}
	for _, obj := range objs {
		row := metav1.TableRow{Cells: p.cells(obj)}
		switch metav1.IncludeObjectPolicy(includeObject) {
		case metav1.IncludeNone:
		case metav1.IncludeObject:
			row.Object.Object = typed(res, obj)
		default:
			pm := partialMeta(obj)
			if _, ok := obj.(*appsv1.DaemonSet); ok {
				// The real printer sees the internal object, whose template
				// generation becomes this annotation only in apps/v1.
				delete(pm.Annotations, appsv1.DeprecatedTemplateGeneration)
				if len(pm.Annotations) == 0 {
					pm.Annotations = nil
				}
			}
			row.Object.Object = pm
		}
		if pod, ok := obj.(*corev1.Pod); ok {
			switch pod.Status.Phase {
			case corev1.PodSucceeded:
				row.Conditions = []metav1.TableRowCondition{{Type: metav1.RowCompleted, Status: metav1.ConditionTrue, Reason: string(pod.Status.Phase), Message: "The pod has completed successfully."}}
			case corev1.PodFailed:
				row.Conditions = []metav1.TableRowCondition{{Type: metav1.RowCompleted, Status: metav1.ConditionTrue, Reason: string(pod.Status.Phase), Message: "The pod failed."}}
			}
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// age is translateTimestampSince of the real printers.
func age(ts metav1.Time) string {
	if ts.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(time.Since(ts.Time))
}

func nodeCells(o runtime.Object) []any {
	n := o.(*corev1.Node)
	var status []string
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			if c.Status == corev1.ConditionTrue {
				status = append(status, string(c.Type))
			} else {
				status = append(status, "Not"+string(c.Type))
			}
			break
		}
	}
	if len(status) == 0 {
		status = append(status, "Unknown")
	}
	if n.Spec.Unschedulable {
		status = append(status, "SchedulingDisabled")
	}
	roleSet := map[string]bool{}
	for k, v := range n.Labels {
		switch {
		case strings.HasPrefix(k, "node-role.kubernetes.io/"):
			if role := strings.TrimPrefix(k, "node-role.kubernetes.io/"); role != "" {
				roleSet[role] = true
			}
		case k == "kubernetes.io/role" && v != "":
			roleSet[v] = true
		}
	}
	roles := make([]string, 0, len(roleSet))
	for r := range roleSet {
		roles = append(roles, r)
	}
	sort.Strings(roles)
	rolesStr := strings.Join(roles, ",")
	if rolesStr == "" {
		rolesStr = "<none>"
	}
	info := n.Status.NodeInfo
	osImage, kernel, cr := orUnknown(info.OSImage), orUnknown(info.KernelVersion), orUnknown(info.ContainerRuntimeVersion)
	if info.Architecture != "" {
		kernel += " (" + info.Architecture + ")"
	}
	return []any{n.Name, strings.Join(status, ","), rolesStr, age(n.CreationTimestamp), info.KubeletVersion,
		nodeAddress(n, corev1.NodeInternalIP), nodeAddress(n, corev1.NodeExternalIP), osImage, kernel, cr}
}

func orUnknown(s string) string {
	if s == "" {
		return "<unknown>"
	}
	return s
}

func nodeAddress(n *corev1.Node, t corev1.NodeAddressType) string {
	for _, a := range n.Status.Addresses {
		if a.Type == t {
			return a.Address
		}
	}
	return "<none>"
}

// podCells is printPod of the real printers.
func podCells(o runtime.Object) []any {
	pod := o.(*corev1.Pod)
	restarts, sidecarRestarts := 0, 0
	total, ready := len(pod.Spec.Containers), 0
	var lastRestart, lastSidecarRestart time.Time
	reason := string(pod.Status.Phase)
	if pod.Status.Reason != "" {
		reason = pod.Status.Reason
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonSchedulingGated {
			reason = corev1.PodReasonSchedulingGated
		}
	}
	inits := map[string]*corev1.Container{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		inits[c.Name] = c
		if isSidecar(c) {
			total++
		}
	}
	later := func(t *time.Time, s corev1.ContainerStatus) {
		if term := s.LastTerminationState.Terminated; term != nil && t.Before(term.FinishedAt.Time) {
			*t = term.FinishedAt.Time
		}
	}
	initializing := false
	for i, c := range pod.Status.InitContainerStatuses {
		restarts += int(c.RestartCount)
		later(&lastRestart, c)
		if isSidecar(inits[c.Name]) {
			sidecarRestarts += int(c.RestartCount)
			later(&lastSidecarRestart, c)
		}
		switch {
		case c.State.Terminated != nil && c.State.Terminated.ExitCode == 0:
			continue
		case isSidecar(inits[c.Name]) && c.Started != nil && *c.Started:
			if c.Ready {
				ready++
			}
			continue
		case c.State.Terminated != nil:
			switch {
			case c.State.Terminated.Reason != "":
				reason = "Init:" + c.State.Terminated.Reason
			case c.State.Terminated.Signal != 0:
				reason = fmt.Sprintf("Init:Signal:%d", c.State.Terminated.Signal)
			default:
				reason = fmt.Sprintf("Init:ExitCode:%d", c.State.Terminated.ExitCode)
			}
		case c.State.Waiting != nil && c.State.Waiting.Reason != "" && c.State.Waiting.Reason != "PodInitializing":
			reason = "Init:" + c.State.Waiting.Reason
		default:
			reason = fmt.Sprintf("Init:%d/%d", i, len(pod.Spec.InitContainers))
		}
		initializing = true
		break
	}
	if !initializing || conditionTrue(pod, corev1.PodInitialized) {
		restarts, lastRestart = sidecarRestarts, lastSidecarRestart
		hasRunning, errorReason := false, ""
		for i := len(pod.Status.ContainerStatuses) - 1; i >= 0; i-- {
			c := pod.Status.ContainerStatuses[i]
			restarts += int(c.RestartCount)
			later(&lastRestart, c)
			switch {
			case c.State.Waiting != nil && c.State.Waiting.Reason != "":
				reason = c.State.Waiting.Reason
			case c.State.Terminated != nil:
				switch {
				case c.State.Terminated.Reason != "":
					reason = c.State.Terminated.Reason
				case c.State.Terminated.Signal != 0:
					reason = fmt.Sprintf("Signal:%d", c.State.Terminated.Signal)
				default:
					reason = fmt.Sprintf("ExitCode:%d", c.State.Terminated.ExitCode)
				}
				if c.State.Terminated.ExitCode != 0 {
					errorReason = reason
				}
			case c.Ready && c.State.Running != nil:
				hasRunning = true
				ready++
			}
		}
		if reason == "Completed" {
			switch {
			case hasRunning && hasCondition(pod, corev1.PodReady):
				reason = "Running"
			case errorReason != "":
				reason = errorReason
			case hasRunning:
				reason = "NotReady"
			}
		}
	}
	if pod.DeletionTimestamp != nil && pod.Status.Reason == "NodeLost" {
		reason = "Unknown"
	} else if pod.DeletionTimestamp != nil && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
		reason = "Terminating"
	}
	restartsStr := strconv.Itoa(restarts)
	if restarts != 0 && !lastRestart.IsZero() {
		restartsStr = fmt.Sprintf("%d (%s ago)", restarts, age(metav1.NewTime(lastRestart)))
	}
	ip := "<none>"
	if len(pod.Status.PodIPs) > 0 && pod.Status.PodIPs[0].IP != "" {
		ip = pod.Status.PodIPs[0].IP
	}
	node, nominated, gates := pod.Spec.NodeName, pod.Status.NominatedNodeName, "<none>"
	if node == "" {
		node = "<none>"
	}
	if nominated == "" {
		nominated = "<none>"
	}
	if len(pod.Spec.ReadinessGates) > 0 {
		n := 0
		for _, g := range pod.Spec.ReadinessGates {
			if conditionTrue(pod, g.ConditionType) {
				n++
			}
		}
		gates = fmt.Sprintf("%d/%d", n, len(pod.Spec.ReadinessGates))
	}
	return []any{pod.Name, fmt.Sprintf("%d/%d", ready, total), reason, restartsStr, age(pod.CreationTimestamp), ip, node, nominated, gates}
}

func isSidecar(c *corev1.Container) bool {
	return c != nil && c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// conditionTrue reports whether the pod's first condition of type t is true.
func conditionTrue(pod *corev1.Pod, t corev1.PodConditionType) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func hasCondition(pod *corev1.Pod, t corev1.PodConditionType) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}
