package kubelite

import (
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
)

// setDefaults applies, on create, the defaults and admission changes of
// the real apiserver that clients notice (not all of them).
func setDefaults(obj runtime.Object) {
	switch o := obj.(type) {
	case *corev1.Namespace:
		if o.Labels == nil {
			o.Labels = map[string]string{}
		}
		o.Labels[corev1.LabelMetadataName] = o.Name
		if len(o.Spec.Finalizers) == 0 {
			o.Spec.Finalizers = []corev1.FinalizerName{corev1.FinalizerKubernetes}
		}
		o.Status = corev1.NamespaceStatus{Phase: corev1.NamespaceActive}
	case *corev1.Secret:
		if o.Type == "" {
			o.Type = corev1.SecretTypeOpaque
		}
	case *corev1.Service:
		defaultService(o)
	case *corev1.Pod:
		defaultPod(o)
	case *appsv1.Deployment:
		if o.Spec.Replicas == nil {
			o.Spec.Replicas = ptr(int32(1))
		}
		if o.Spec.Strategy.Type == "" {
			o.Spec.Strategy.Type = appsv1.RollingUpdateDeploymentStrategyType
		}
		if o.Spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType {
			if o.Spec.Strategy.RollingUpdate == nil {
				o.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{}
			}
			if o.Spec.Strategy.RollingUpdate.MaxUnavailable == nil {
				o.Spec.Strategy.RollingUpdate.MaxUnavailable = ptr(intstr.FromString("25%"))
			}
			if o.Spec.Strategy.RollingUpdate.MaxSurge == nil {
				o.Spec.Strategy.RollingUpdate.MaxSurge = ptr(intstr.FromString("25%"))
			}
		}
		if o.Spec.RevisionHistoryLimit == nil {
			o.Spec.RevisionHistoryLimit = ptr(int32(10))
		}
		if o.Spec.ProgressDeadlineSeconds == nil {
			o.Spec.ProgressDeadlineSeconds = ptr(int32(600))
		}
		defaultPodSpec(&o.Spec.Template.Spec)
	case *appsv1.ReplicaSet:
		if o.Spec.Replicas == nil {
			o.Spec.Replicas = ptr(int32(1))
		}
		defaultPodSpec(&o.Spec.Template.Spec)
	case *appsv1.DaemonSet:
		if o.Spec.UpdateStrategy.Type == "" {
			o.Spec.UpdateStrategy.Type = appsv1.RollingUpdateDaemonSetStrategyType
		}
		if o.Spec.UpdateStrategy.Type == appsv1.RollingUpdateDaemonSetStrategyType {
			if o.Spec.UpdateStrategy.RollingUpdate == nil {
				o.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{}
			}
			if o.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable == nil {
				o.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr(intstr.FromInt32(1))
			}
			if o.Spec.UpdateStrategy.RollingUpdate.MaxSurge == nil {
				o.Spec.UpdateStrategy.RollingUpdate.MaxSurge = ptr(intstr.FromInt32(0))
			}
		}
		if o.Spec.RevisionHistoryLimit == nil {
			o.Spec.RevisionHistoryLimit = ptr(int32(10))
		}
		defaultPodSpec(&o.Spec.Template.Spec)
		if o.Annotations == nil {
			o.Annotations = map[string]string{}
		}
		o.Annotations[appsv1.DeprecatedTemplateGeneration] = "1"
	case *appsv1.StatefulSet:
		if o.Spec.Replicas == nil {
			o.Spec.Replicas = ptr(int32(1))
		}
		if o.Spec.PodManagementPolicy == "" {
			o.Spec.PodManagementPolicy = appsv1.OrderedReadyPodManagement
		}
		if o.Spec.UpdateStrategy.Type == "" {
			o.Spec.UpdateStrategy.Type = appsv1.RollingUpdateStatefulSetStrategyType
		}
		if o.Spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType && o.Spec.UpdateStrategy.RollingUpdate == nil {
			o.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr(int32(0)), MaxUnavailable: ptr(intstr.FromInt32(1))}
		}
		if o.Spec.RevisionHistoryLimit == nil {
			o.Spec.RevisionHistoryLimit = ptr(int32(10))
		}
		if o.Spec.PersistentVolumeClaimRetentionPolicy == nil {
			o.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType, WhenScaled: appsv1.RetainPersistentVolumeClaimRetentionPolicyType}
		}
		defaultPodSpec(&o.Spec.Template.Spec)
	case *corev1.Node:
		// The TaintNodesByCondition admission plugin.
		taint := corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}
		for _, t := range o.Spec.Taints {
			if t.MatchTaint(&taint) {
				return
			}
		}
		o.Spec.Taints = append(o.Spec.Taints, taint)
	}
}

func defaultPod(p *corev1.Pod) {
	s := &p.Spec
	defaultPodSpec(s)
	if s.EnableServiceLinks == nil {
		s.EnableServiceLinks = ptr(corev1.DefaultEnableServiceLinks)
	}
	if s.PreemptionPolicy == nil {
		s.PreemptionPolicy = ptr(corev1.PreemptLowerPriority)
	}
	if s.Priority == nil {
		s.Priority = ptr(int32(0))
	}
	if s.ServiceAccountName == "" {
		s.ServiceAccountName = "default"
	}
	s.DeprecatedServiceAccount = s.ServiceAccountName
	for _, cs := range [][]corev1.Container{s.InitContainers, s.Containers} {
		for i := range cs {
			c := &cs[i]
			for name, q := range c.Resources.Limits {
				if _, ok := c.Resources.Requests[name]; !ok {
					if c.Resources.Requests == nil {
						c.Resources.Requests = corev1.ResourceList{}
					}
					c.Resources.Requests[name] = q.DeepCopy()
				}
			}
		}
	}
	serviceAccountVolume(p)
	// The DefaultTolerationSeconds admission plugin.
	for _, key := range []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable} {
		found := false
		for _, t := range s.Tolerations {
			if (t.Key == key || t.Key == "" && t.Operator == corev1.TolerationOpExists) && (t.Effect == corev1.TaintEffectNoExecute || t.Effect == "") {
				found = true
			}
		}
		if !found {
			s.Tolerations = append(s.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(int64(300))})
		}
	}
	p.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: qosClass(p)}
}

// defaultPodSpec applies the defaults of a pod spec, in a pod or a template.
func defaultPodSpec(s *corev1.PodSpec) {
	if s.RestartPolicy == "" {
		s.RestartPolicy = corev1.RestartPolicyAlways
	}
	if s.DNSPolicy == "" {
		s.DNSPolicy = corev1.DNSClusterFirst
	}
	if s.SchedulerName == "" {
		s.SchedulerName = corev1.DefaultSchedulerName
	}
	if s.TerminationGracePeriodSeconds == nil {
		s.TerminationGracePeriodSeconds = ptr(int64(corev1.DefaultTerminationGracePeriodSeconds))
	}
	if s.SecurityContext == nil {
		s.SecurityContext = &corev1.PodSecurityContext{}
	}
	for _, cs := range [][]corev1.Container{s.InitContainers, s.Containers} {
		for i := range cs {
			c := &cs[i]
			if c.TerminationMessagePath == "" {
				c.TerminationMessagePath = corev1.TerminationMessagePathDefault
			}
			if c.TerminationMessagePolicy == "" {
				c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
			}
			if c.ImagePullPolicy == "" {
				c.ImagePullPolicy = corev1.PullIfNotPresent
				if img := c.Image[strings.LastIndex(c.Image, "/")+1:]; !strings.Contains(img, ":") && !strings.Contains(img, "@") || strings.HasSuffix(img, ":latest") {
					c.ImagePullPolicy = corev1.PullAlways
				}
			}
			for j := range c.Ports {
				if c.Ports[j].Protocol == "" {
					c.Ports[j].Protocol = corev1.ProtocolTCP
				}
			}
		}
	}
}

// qosClass is the pod's quality of service class, from its containers'
// cpu and memory requests and limits.
func qosClass(p *corev1.Pod) corev1.PodQOSClass {
	some, guaranteed := false, true
	for _, cs := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for _, c := range cs {
			for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				req, hasReq := c.Resources.Requests[name]
				lim, hasLim := c.Resources.Limits[name]
				if hasReq && !req.IsZero() || hasLim && !lim.IsZero() {
					some = true
				}
				if !hasLim || lim.IsZero() || hasReq && req.Cmp(lim) != 0 {
					guaranteed = false
				}
			}
		}
	}
	switch {
	case !some:
		return corev1.PodQOSBestEffort
	case guaranteed:
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}

// serviceAccountVolume is the ServiceAccount admission plugin's projected
// token volume, mounted in every container.
func serviceAccountVolume(p *corev1.Pod) {
	const mountPath = "/var/run/secrets/kubernetes.io/serviceaccount"
	if p.Spec.AutomountServiceAccountToken != nil && !*p.Spec.AutomountServiceAccountToken {
		return
	}
	for _, c := range p.Spec.Containers {
		for _, m := range c.VolumeMounts {
			if m.MountPath == mountPath {
				return
			}
		}
	}
	name := "kube-api-access-" + utilrand.String(5)
	p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: ptr(int64(3607)), Path: "token"}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		},
		DefaultMode: ptr(int32(0o644)),
	}}})
	for _, cs := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for i := range cs {
			cs[i].VolumeMounts = append(cs[i].VolumeMounts, corev1.VolumeMount{Name: name, ReadOnly: true, MountPath: mountPath})
		}
	}
}

// normalize is what the real server does to every object it is given,
// on create and update: a Secret's stringData is merged into its data.
func normalize(obj runtime.Object) {
	if sec, ok := obj.(*corev1.Secret); ok && sec.StringData != nil {
		if sec.Data == nil {
			sec.Data = map[string][]byte{}
		}
		for k, v := range sec.StringData {
			sec.Data[k] = []byte(v)
		}
		sec.StringData = nil
	}
}

// defaultService applies a Service's defaults; its cluster IP is set by
// the Store's allocator.
func defaultService(svc *corev1.Service) {
	s := &svc.Spec
	if s.Type == "" {
		s.Type = corev1.ServiceTypeClusterIP
	}
	if s.SessionAffinity == "" {
		s.SessionAffinity = corev1.ServiceAffinityNone
	}
	for i := range s.Ports {
		p := &s.Ports[i]
		if p.Protocol == "" {
			p.Protocol = corev1.ProtocolTCP
		}
		if p.TargetPort == (intstr.IntOrString{}) {
			p.TargetPort = intstr.FromInt32(p.Port)
		}
	}
	if s.Type != corev1.ServiceTypeExternalName && s.InternalTrafficPolicy == nil {
		s.InternalTrafficPolicy = ptr(corev1.ServiceInternalTrafficPolicyCluster)
	}
	if (s.Type == corev1.ServiceTypeNodePort || s.Type == corev1.ServiceTypeLoadBalancer) && s.ExternalTrafficPolicy == "" {
		s.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	}
	if s.Type != corev1.ServiceTypeExternalName && s.ClusterIP != corev1.ClusterIPNone {
		if s.IPFamilyPolicy == nil {
			s.IPFamilyPolicy = ptr(corev1.IPFamilyPolicySingleStack)
		}
		if len(s.IPFamilies) == 0 {
			s.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
		}
	}
}

// podUpdateForbidden is the real validation's refusal of a pod spec
// change (without its diff of the two specs), or "" when allowed.
func podUpdateForbidden(old, cur *corev1.Pod) string {
	munged := cur.Spec.DeepCopy()
	if len(munged.Containers) == len(old.Spec.Containers) && len(munged.InitContainers) == len(old.Spec.InitContainers) {
		for i := range munged.Containers {
			munged.Containers[i].Image = old.Spec.Containers[i].Image
		}
		for i := range munged.InitContainers {
			munged.InitContainers[i].Image = old.Spec.InitContainers[i].Image
		}
	}
	munged.ActiveDeadlineSeconds = old.Spec.ActiveDeadlineSeconds
	added := len(munged.Tolerations) >= len(old.Spec.Tolerations)
	for i := range old.Spec.Tolerations {
		added = added && i < len(munged.Tolerations) && munged.Tolerations[i].MatchToleration(&old.Spec.Tolerations[i])
	}
	if added {
		munged.Tolerations = old.Spec.Tolerations
	}
	if old.Spec.TerminationGracePeriodSeconds != nil && *old.Spec.TerminationGracePeriodSeconds < 0 && munged.TerminationGracePeriodSeconds != nil && *munged.TerminationGracePeriodSeconds == 1 {
		munged.TerminationGracePeriodSeconds = old.Spec.TerminationGracePeriodSeconds
	}
	if apiequality.Semantic.DeepEqual(munged, &old.Spec) {
		return ""
	}
	return "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"
}
