"""The box kernel carries what the labs need of a kernel, as the UML kernel does."""

from mptcplab.places import box_kernel, uml_kernel

# The UML kernel's options that only a UML kernel has (its root over hostfs, its clock).
UML_ONLY = {"HOSTFS", "UML_TIME_TRAVEL_SUPPORT"}
# Options of the UML fragment that Debian's config already builds in (PROC_FS, SYSFS, DEVTMPFS,
# STACKTRACE) or that a box does not need: default tracers exist only for a kernel without
# Debian's function tracer, and systemd (or virtme's init) mounts /dev itself.
FROM_DEBIAN = {"ENABLE_DEFAULT_TRACERS", "STACKTRACE", "PROC_FS", "SYSFS", "DEVTMPFS", "DEVTMPFS_MOUNT"}


def test_every_lab_option_of_the_uml_kernel_is_built_into_the_box_kernel():
    missing = set(uml_kernel.config_options()) - UML_ONLY - FROM_DEBIAN - set(box_kernel.options())
    assert not missing, f"the box kernel lacks {sorted(missing)}, which the UML kernel gives the labs"


def test_the_box_kernel_carries_the_papers_scheduler_and_only_that_patch():
    assert box_kernel.PATCH.name == "mptcp-minrtt-scheduler.patch" and box_kernel.PATCH.exists()
    assert "sched_minrtt.c" in box_kernel.PATCH.read_text()


def test_debian_version_is_marked_as_the_kits_build():
    assert box_kernel._deb_version("6.12.117-1~deb12u1") == "6.12.117-1~deb12u1+mptcplab1"


def test_each_architecture_asks_only_for_what_its_kconfig_offers():
    # 6.12's VirtualBox guest driver and shared folders depend on X86: asking arm64's kconfig for
    # them got the build refused at its configure step ("dropped VBOXGUEST, VBOXSF_FS")
    assert {"VBOXGUEST", "VBOXSF_FS"} <= set(box_kernel.options("amd64"))
    assert not {"VBOXGUEST", "VBOXSF_FS"} & set(box_kernel.options("arm64"))
    assert set(box_kernel.options("amd64")) - set(box_kernel.options("arm64")) == set(box_kernel.ONLY_ON)
    assert "VIRTIO_VSOCKETS" in box_kernel.options("arm64")  # Lima's guest agent under Apple's hypervisor
