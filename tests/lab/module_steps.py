"""A module's tests as the steps of one life, in order, on one lab held by
a module fixture: after a step that failed, the later ones are skipped,
naming it (their lab is not in the state they expect)."""

import contextlib

import pytest


class Ordered(object):
    """What a module's steps share; the first step that failed."""

    failed = None

    @contextlib.contextmanager
    def guard(self, request):
        """This object for the test of ``request``, unless an earlier step
        failed; a failure of this one is remembered."""
        if self.failed:
            pytest.skip('an earlier step failed: %s' % self.failed)
        failed_before = request.session.testsfailed
        yield self
        if request.session.testsfailed > failed_before:
            self.failed = request.node.name


def fixtures(make):
    """A module's ``life`` fixture (``make(assert_lab_clean)``, a context
    manager that yields an Ordered, held until the module ends) and its
    ``step`` fixture (the life, unless an earlier step failed)."""
    @pytest.fixture(scope='module')
    def life(assert_lab_clean):
        with make(assert_lab_clean) as made:
            yield made

    @pytest.fixture
    def step(life, request):
        with life.guard(request) as guarded:
            yield guarded
    return life, step
