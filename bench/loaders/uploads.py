"""Puts a directory a peer's writer made locally (shards, index files) under the
run's prefix in the store."""
import os
from concurrent.futures import ThreadPoolExecutor


def upload_dir(ctx, root, acl=None):
    s3 = ctx.s3()
    files = [os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs]
    extra = {"ACL": acl} if acl else {}

    def put(path):
        key = f"{ctx.prefix}/{os.path.relpath(path, root)}"
        s3.upload_file(path, ctx.bucket, key, ExtraArgs=extra)

    with ThreadPoolExecutor(8) as ex:
        list(ex.map(put, files))
