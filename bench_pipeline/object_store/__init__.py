"""Run folders, outputs and other files in object storage (``s3://``, ``gs://``), through fsspec.

A *location* is a local path or a URL ``<scheme>://<bucket>/<key prefix>``; ``is_remote``
tells them apart (``s3:/bucket/key``, what ``pathlib`` makes of a URL, counts as the URL).
Credentials and the endpoint come from each SDK's own variables (for S3: ``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``, ``AWS_PROFILE``, ``AWS_REGION`` and
``AWS_ENDPOINT_URL``, so that any S3 API serves; for Google Cloud Storage
``GOOGLE_APPLICATION_CREDENTIALS`` and ``STORAGE_EMULATOR_HOST``), read by the client (s3fs /
gcsfs), never here. gs:// goes through gcsfs's JSON API client (``gcsfs.core.GCSFileSystem``),
and, as Google's own client does, with anonymous credentials when ``STORAGE_EMULATOR_HOST``
names an emulator.

The stages read and write local files only. This module is what stands between them and a
bucket:

- ``list_runs``: the run folders under a runs root with the metadata (size, ETag,
  last-modified) of the files named at the top of each (run_folders.LISTED_FILES:
  manifest.json, suite.json, results.jsonl, results.rejudged.jsonl and the runner's
  metrics.json and summary.md), from listing pages alone
  (on S3 one listing of the whole root whose delimiter ``/tasks/`` rolls each run's
  conventional artifact folder into one entry, so a page covers about 300 runs);
- ``mirror``: a folder of the bucket copied into the local cache
  (``$BENCH_CACHE/object-store/<scheme>/<bucket>/<key>``, default
  ``$BENCH_HOME/cache``), object by object, only what changed since the last copy (a small
  index beside the folder keeps each object's size, ETag and last-modified), in parallel;
  keys that cannot be a path inside the folder (``..`` or ``.`` segments, empty segments
  as in an absolute key, keys outside the folder's prefix) are refused with a located
  finding and never fetched;
- ``upload``: a local folder's files to a bucket folder, one PUT per object (an object
  appears whole or not at all: no reader sees a half-written metrics.json), metrics.json
  last so that a folder with metrics.json is complete;
- ``read_bytes``, ``read_objects``, ``write_bytes``, ``exists``: single objects.

Every failure is a ``StoreError`` naming the location and the reason (the bucket does not
exist, no credentials, the endpoint cannot be reached, access denied, the client is not
installed). Each call runs its client on an event-loop thread of its own that ends with
the call, so a process that forks after it (``bulk.can_fork``) has no thread left behind.

The modules: ``locations`` (pure), ``clients``, ``listings``, ``objects``, ``copies``,
``conditional``; this package hands their names on. A test that replaces one of them
(``monkeypatch``) does so in the module that calls it.
"""

from .clients import (CONCURRENCY, StoreError, _gcs_client, _Session, endpoint, reason, session, shared, storage_path,
                      write_whole)
from .conditional import create_exclusive, delete_if_unchanged, read_with_etag
from .listings import Listing, ObjectInfo, list_objects, list_runs
from .locations import (CLIENTS, LOCAL_SCHEMES, MIRROR, cache_root, is_remote, join, location_text, mirror_path,
                        normalize, relative_link, split, staging_root, url_of)
from .copies import Mirrored, mirror, mirror_files, refusals, remove_tree, unsafe_key
from .objects import delete, exists, read_bytes, read_objects, upload, write_bytes
