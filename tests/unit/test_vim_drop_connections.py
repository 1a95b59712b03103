"""k8s_mgmt.vim.drop_connections: the deleted VIM's entries go."""

import types
import unittest

from k8s_mgmt import vim


class DropConnectionsTest(unittest.TestCase):

    def test_object(self):
        inst = types.SimpleNamespace(vim_connection_info=[
            types.SimpleNamespace(vim_id='os'),
            types.SimpleNamespace(vim_id='k8s-old')])
        self.assertEqual(1, vim.drop_connections(inst, ['k8s-old']))
        self.assertEqual(['os'],
                         [c.vim_id for c in inst.vim_connection_info])

    def test_dict_and_nothing_to_drop(self):
        inst = {'vim_connection_info': [{'vim_id': 'os'}]}
        self.assertEqual(0, vim.drop_connections(inst, ['k8s-old']))
        self.assertEqual([{'vim_id': 'os'}], inst['vim_connection_info'])
        inst = {'vim_connection_info': [{'vim_id': 'k8s-old'}]}
        self.assertEqual(1, vim.drop_connections(inst, ['k8s-old']))
        self.assertEqual([], inst['vim_connection_info'])
