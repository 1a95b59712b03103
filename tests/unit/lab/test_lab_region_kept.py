"""A lab's own control plane kept outside its state dir (``lab up
--own-control-plane --control-plane DIR``, what ``k8s-mgmt demo`` uses):
RegionOne and Tacker, one lab at a time, recorded so that ``lab down``
leaves the plane running."""

import os

import pytest

from k8s_mgmt_lab.errors import LabError
from k8s_mgmt_lab.openstack import lab_region


def test_a_kept_plane_is_the_labs_own_in_region_one_with_tacker(tmp_path):
    region = lab_region.LabRegion(str(tmp_path / 'lab'), 'k1',
                                  kept_plane=str(tmp_path / 'plane'))
    assert (region.kept, region.shared, region.tacker) == (True, False,
                                                           True)
    assert region.region == 'RegionOne' and region.name == 'lab-k1'
    assert region.plane.layout.root == str(tmp_path / 'plane')
    # Without it, the plane lives in the lab's state dir.
    inside = lab_region.LabRegion(str(tmp_path / 'lab'), 'k1')
    assert inside.plane.layout.root == str(tmp_path / 'lab' / 'openstack')
    assert not inside.kept and inside.tacker
    # A shared plane wins over a kept one (and runs no Tacker).
    shared = lab_region.LabRegion(str(tmp_path / 'lab'), 'k1',
                                  shared_plane=str(tmp_path / 'shared'),
                                  kept_plane=str(tmp_path / 'plane'))
    assert shared.shared and not shared.kept and not shared.tacker


def test_a_kept_plane_serves_one_lab_that_is_up(tmp_path):
    plane = str(tmp_path / 'plane')
    os.makedirs(plane)
    first = lab_region.LabRegion(str(tmp_path / 'one'), 'k1',
                                 kept_plane=plane)
    first._claim_kept_plane()
    first._claim_kept_plane()           # the same lab again: fine
    other = lab_region.LabRegion(str(tmp_path / 'two'), 'k2',
                                 kept_plane=plane)
    # The first lab is not up (no lab.json): its claim is stale.
    other._claim_kept_plane()
    os.makedirs(str(tmp_path / 'two'))
    (tmp_path / 'two' / 'lab.json').write_text('{}')
    with pytest.raises(LabError, match='take that lab down first'):
        first._claim_kept_plane()
    marker = os.path.join(plane, lab_region.IN_USE_FILE)
    assert open(marker).read().strip() == str(tmp_path / 'two')
    assert oct(os.stat(marker).st_mode & 0o777) == '0o600'


def test_a_warm_plane_is_borrowed_by_a_lab_of_its_own_alone(tmp_path):
    warm = str(tmp_path / 'warm')
    borrowed = lab_region.LabRegion(str(tmp_path / 'lab'), 'k1',
                                    warm_plane=warm)
    assert (borrowed.kept, borrowed.borrowed, borrowed.tacker) == (
        True, True, True)
    assert borrowed.plane.layout.root == warm
    assert borrowed.region == 'RegionOne'
    # A plane named for the lab (--control-plane) is not borrowed: a
    # second lab is refused there, not sent elsewhere.
    named = lab_region.LabRegion(str(tmp_path / 'lab'), 'k1',
                                 kept_plane=str(tmp_path / 'plane'),
                                 warm_plane=warm)
    assert named.kept and not named.borrowed
    assert named.plane.layout.root == str(tmp_path / 'plane')
    # A lab on a shared plane takes a region of it, never the warm one.
    shared = lab_region.LabRegion(str(tmp_path / 'lab'), 'k1',
                                  shared_plane=warm, warm_plane=warm)
    assert shared.shared and not (shared.kept or shared.borrowed)


class _Plane(object):
    def __init__(self, root):
        self.layout = type('Layout', (), {'root': root})()
        self.started = 0

    def up(self):
        self.started += 1


def test_a_warm_plane_held_by_a_lab_that_is_up_is_left_to_it(
        tmp_path, monkeypatch):
    warm = str(tmp_path / 'warm')
    monkeypatch.setattr(lab_region.control_plane, 'ControlPlane',
                        lambda root, *args, **kwargs: _Plane(root))
    first = lab_region.LabRegion(str(tmp_path / 'one'), 'k1',
                                 warm_plane=warm)
    first.start_plane()
    assert first.kept and first.plane.started == 1
    os.makedirs(str(tmp_path / 'one'))
    (tmp_path / 'one' / 'lab.json').write_text('{}')
    second = lab_region.LabRegion(str(tmp_path / 'two'), 'k2',
                                  warm_plane=warm)
    second.start_plane()
    # The second lab started a plane of its own, in its state dir.
    assert not (second.kept or second.borrowed)
    assert second.plane.layout.root == str(tmp_path / 'two' / 'openstack')
    assert second.plane.started == 1
    with open(os.path.join(warm, lab_region.IN_USE_FILE)) as marker:
        assert marker.read().strip() == str(tmp_path / 'one')
