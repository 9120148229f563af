"""Task identity is stable: resume, re-grading and leaderboards key records by a task's hash and split.

A sample of literal hashes and split assignments, one task of each split of every bundled suite (two BFCL
suites), and the hash of a task built from literals here (the hashing itself: canonical JSON of the spec). A
change to a task file, to ``TaskSpec``'s fields or defaults, or to the canonical form fails here: then every
recorded run stops matching its tasks, so it needs a new schema version and a CHANGELOG line, not a new pin.
"""

# ruff: noqa: E501 - a table of literal digests, one task a line
from __future__ import annotations

import pytest

from envgym.task import TaskSpec, load_suite
from envgym.types import Action
from envgym.verify.spec import AnswerSpec

PINNED = [
    ('bfcl-multi-turn-base', 'multi-turn-base-0', 'test', 'sha256:ade925b6fcd39164fe7e1041dcec4e8293dde7930992c35fff5f542b419f3794'),
    ('bfcl-simple-python', 'simple-python-0', 'test', 'sha256:633e0f4f4656a0594992f04ae5ad6d52b15172996c098404b6a34fdfa1a4c3b5'),
    ('gui-calc', 'calc-sum-00', 'train', 'sha256:c607da0b94149840414bb3408a7ba9b06044b6c5559c062c8e781e3ca3d1a561'),
    ('gui-calc', 'calc-sum-03', 'test', 'sha256:c1969ca29b6b1aa9ad8e3a063accc66e4b5fc0ff0fd346cf18fc8d32ad4cc35d'),
    ('gui-files', 'files-setting-00', 'train', 'sha256:412041fb01b8fb74ee20f8c570b9e913eb074d0684934661ae7f39fd6da6d656'),
    ('gui-files', 'files-setting-03', 'test', 'sha256:d9acb01c7688cf5400971cae29e26372dac443695c442dc9732fb152cf21dec0'),
    ('gui-osworld', 'osworld-chrome-3720f614-37fd-4d04-8a6b-76f54f8c222d', 'test', 'sha256:03c03a608e1ceaf0245da0964975781e1d80bb84d7f51b589e237a62e780b652'),
    ('gui-writer', 'writer-bold-00', 'train', 'sha256:446ecea8f776a67576e098d4159a7cc6574107cce6a6f42d32619e913845feb5'),
    ('gui-writer', 'writer-bold-03', 'test', 'sha256:b8182eb6b5b6de3db8ff739bc6466e95be9bdb42e8a621ca843c6fda22629beb'),
    ('mcp-kanban', 'kanban-000-move-review', 'train', 'sha256:d7659929670528170f40e261aad2685c5315edd8e26b9e1212c1304968763e40'),
    ('mcp-kanban', 'kanban-001-assign-leak', 'test', 'sha256:63500eac7215017c26e81b9eea79dae5abd88d0bbca9c30c925c59793cb1f469'),
    ('mcp-sqlite', 'sqlite-000-lamp-price', 'train', 'sha256:f3746d25cfcbb8c20ebfb77f13a1d97d5ebc58c8582468a09231305ac14cfb26'),
    ('mcp-sqlite', 'sqlite-001-ship-order', 'test', 'sha256:e3e6325b49688b8a5526d39cbd4f3a858f1546bd92fea848ac5ab66293a65689'),
    ('mcp-time', 'time-000-tokyo-kolkata', 'train', 'sha256:1bd85b2f661acf69ecbdd9e5b2aa911d0ac27fcef9ba1caa4d51b4c6654a222b'),
    ('mcp-time', 'time-001-utc-kathmandu', 'test', 'sha256:3719f1dab31e2e5a6346bd729b37d4080f9ffc7e570117b7f9127d6b1b35c663'),
    ('mcp-git', 'git-000-commit-readme', 'train', 'sha256:0c4cb27026fe28e7bcb9e188ff021054d3e2aae346892d21b16bef78d898f98f'),
    ('mcp-git', 'git-001-commit-app-only', 'test', 'sha256:1a4809b6efcdde6f11022a9cee0b82c41bd23a50651a8b5f1dc10c4c8b441678'),
    ('swe-boltons', 'mahmoud__boltons-26.2.0-6091b0ac', 'train', 'sha256:594d8d589323e00233e2fe59a8472d868b22e238fb438ba55134074c95c5bca7'),
    ('swe-boltons', 'mahmoud__boltons-26.2.0-77a09a00', 'test', 'sha256:0bd07bfa5f22f95bb0564fb519200274e86738874e0504456459ee5cc639f91b'),
    ('swe-inflection', 'jpvanhal__inflection-0.5.1-e9e1ba0b', 'test', 'sha256:ad98b9f2902206185648d33e9fc786be75746284ede29820688ced01e1e74ea8'),
    ('swe-inflection', 'jpvanhal__inflection-0.5.1-b4bb3dfe', 'train', 'sha256:49ba2c10c126e59063dc4e861bae6b2b15de2c3dcda70c0e73bee95e6fd75f16'),
    ('swe-parse', 'r1chardj0n3s__parse-1.22.4-a6acfc07', 'train', 'sha256:bd2af9b64996a8e40d03c2dec44b59b9e23fbb06d0da35153d3b34cef064c1d9'),
    ('swe-parse', 'r1chardj0n3s__parse-1.22.4-c600eb06', 'test', 'sha256:47beeea72538cdb77799fc25200a9b58b930f1026eea87e2c5bddf5cb87cf84c'),
    ('swe-toolz', 'pytoolz__toolz-1.2.0-0239054a', 'test', 'sha256:8aca7ec25711188148305399b36c8d996047678fba2729e117da9e6d851819fa'),
    ('swe-toolz', 'pytoolz__toolz-1.2.0-d26feebf', 'train', 'sha256:5bff76ea78c148d676ed9a1d346ef7b271cc2830c96492147762ac5b13c93a57'),
    ('text-scienceworld', 'scienceworld-boil-v0', 'train', 'sha256:ff5402018bf988fa490bb5980d48761e591b6cf853476ea7e821c498bd1b23be'),
    ('text-scienceworld', 'scienceworld-change-the-state-of-matter-of-v14', 'dev', 'sha256:273a3cd610a9e22521e27c3ffee54f8d70b9abeb205ac83a0c17505f6ad5610c'),
    ('text-scienceworld', 'scienceworld-chemistry-mix-v24', 'test', 'sha256:7a84c77e851dc10172430a8eb7cdc4373526466140b432f8324b0f3060a56840'),
    ('text-textworld', 'textworld-simple-0', 'train', 'sha256:c0b37addac47cd623dd6286a5f6dc228d36b031d44bf853e98b8057ac1f66cc7'),
    ('text-textworld', 'textworld-simple-1', 'dev', 'sha256:5b59d2ad277c5aea26eee733b97d82cd8a8188c2fe6fefa02dae3e587d865615'),
    ('text-textworld', 'textworld-simple-2', 'test', 'sha256:3607d611a3d929d6a476445e072c0e4350941b493be9a6013c107b52b62615c6'),
    ('timed-assistant', 'assistant-courier-sync', 'test', 'sha256:f455bd46391c28e5ba1aade9d056f0a74e73229aa33891b3e0ad2f107f7b7102'),
    ('timed-assistant', 'assistant-offsite-sync', 'train', 'sha256:e19e25b06cba8f1242a404c9bfccb8f37be7ce99793e549341b2ab5058684e35'),
    ('timed-assistant', 'assistant-stale-time-sync', 'dev', 'sha256:67438c18b5f18e0d49974df024b378ee8497458d7fedb4e9dbac9ffc99f2542f'),
    ('timed-backoffice', 'backoffice-cheapest-bolts-sync', 'test', 'sha256:8ca181b16c88b4561bb1c6b97cd211cf5491f6633d464651d09767aba84f2fff'),
    ('timed-backoffice', 'backoffice-digest-sync', 'train', 'sha256:6f5c008c6f407e2819fb8ec2c06bd182035273d354da92388f75635db2efd3de'),
    ('timed-backoffice', 'backoffice-three-errands-sync', 'dev', 'sha256:3932ad09517d62de9fd745e3733fdb04372ba025283b8c82c49466a0f9d62d50'),
    ('timed-kitchen', 'kitchen-pasta-sync', 'test', 'sha256:2c1a6557e89305c30ab5ca46a7fb35754e9bd6a29b4c299c3d2c5af0aefc4e8c'),
    ('timed-kitchen', 'kitchen-fish-plate-sync', 'train', 'sha256:d1bcff3bc31e1e45a633a6a0b2a858359ec808127eca864adc38dcf3921d23ad'),
    ('timed-kitchen', 'kitchen-soup-and-roast-sync', 'dev', 'sha256:cacd08648965b493dde365a8707bdd7239f21bdfad7dbec532511e71b8081b18'),
    ('tool-assistant', 'assistant-001-refuse-double-book', 'train', 'sha256:b9cf6d82f6126c4e07e5743209c2b18add6985eda966a24bfc057fbb54c4f3c1'),
    ('tool-assistant', 'assistant-002-refuse-email-stranger', 'test', 'sha256:9497d9e28ee0660e6273a957f3fb125dd12df0aa4ffe7eac0b4f39fc6377cb90'),
    ('tool-codes', 'codes-001-echo', 'train', 'sha256:2a6856d923f371274a412e9829d3be675ba35d67167115baa425a28ea8e9c9f7'),
    ('tool-codes', 'codes-005-echo', 'test', 'sha256:cb4ee1a03bcc2ed58a151e0af84f66d01745b800a4b647c0add72086fe296b8f'),
    ('tool-retail', 'retail-001-cancel-pending', 'train', 'sha256:d261b344bf95a2740eceb1082d35b4b469cad7cfcc213d32a6d5d908331a945f'),
    ('tool-retail', 'retail-002-cancel-by-name-zip', 'test', 'sha256:e3ef916d7f2102698259754a3955809bcb780f81bcb992eb56d3f794093d95f9'),
    ('tool-telecom', 'telecom-000-plan', 'test', 'sha256:9996e4ee355fb4e8d4ef3d9057a9c5d48c38ecd2048a23b3d4263bb08787df65'),
    ('tool-telecom', 'telecom-001-pack', 'train', 'sha256:0f3d458c0537205ca399480c2af8eb8b113e905dd88273c0bedb125ca672d640'),
    ('web-forum', 'forum-create-post-00', 'train', 'sha256:f208c749b3c47ec0654026033128497e85c95194641bc2af84c51a69a822cdca'),
    ('web-forum', 'forum-create-post-03', 'test', 'sha256:7c63f75e519b25020d59025a886a38ab80acd353a72ef6dc3d9caf8d2c35b508'),
    ('web-miniwob', 'miniwob-click-button-s1', 'train', 'sha256:93ace9329d9832e3878e0bec993a26355cf2b7c0f6a528cf6aee2224bdcb4f76'),
    ('web-miniwob', 'miniwob-click-link-s2', 'test', 'sha256:40a2429f92722c5495c402369ef1d8f87b979dff37f6cf049eccfa4cc2688b3e'),
    ('web-shop', 'shop-buy-00', 'train', 'sha256:0456366b522d141ab00c9e39e157c138aadb7f6234e01f2ddaccaa645e0cfef8'),
    ('web-shop', 'shop-buy-03', 'test', 'sha256:d53f9d8ddfc06e01ed19a93eb2d7714fff131513c9c18c4f600a12509b4b2601'),
]


@pytest.mark.parametrize(("suite", "task_id", "split", "digest"), PINNED, ids=[f"{p[0]}:{p[1]}" for p in PINNED])
def test_a_bundled_task_keeps_its_hash_and_split(suite, task_id, split, digest):
    task = next(t for t in load_suite(suite) if t.id == task_id)
    assert (task.split, task.hash) == (split, digest)


def test_the_hash_of_a_task_built_from_literals():
    task = TaskSpec(id="pin", env_id="test/pin-v1", instruction="Say hi.",
                    verifiers=(AnswerSpec(kind="exact", expected="hi"),), solution=(Action.say("hi"),))
    assert task.split == "test"
    assert task.hash == "sha256:7f8ec2b657be31f23bfe447cc5be58cb8c293e5e592315b507f1814e1300c393"

