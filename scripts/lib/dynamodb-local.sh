# Shared shell functions for installing and running DynamoDB Local. Source it; don't run it.
#
# DynamoDB Local is Amazon's own jar, shipped inside the npm package amplify-dynamodb-simulator
# under package/emulator/. It is installed once into .cache/dynamodb-local (gitignored).

DDB_LOCAL_PACKAGE="amplify-dynamodb-simulator@2.9.30"
DDB_LOCAL_DIR="${DDB_LOCAL_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/.cache/dynamodb-local}"

# Local use never needs real credentials, and the SDK must never ask the EC2 metadata service.
export AWS_REGION="${AWS_REGION:-us-east-1}"
export AWS_ACCESS_KEY_ID="${AWS_ACCESS_KEY_ID:-local}"
export AWS_SECRET_ACCESS_KEY="${AWS_SECRET_ACCESS_KEY:-local}"
export AWS_EC2_METADATA_DISABLED=true

ddb_install() {
  if [ -f "$DDB_LOCAL_DIR/DynamoDBLocal.jar" ]; then
    return 0
  fi
  command -v java >/dev/null || { echo "DynamoDB Local needs Java (17 or later) on PATH" >&2; return 1; }
  command -v npm >/dev/null || { echo "installing DynamoDB Local needs npm on PATH" >&2; return 1; }
  echo "Installing DynamoDB Local ($DDB_LOCAL_PACKAGE) into $DDB_LOCAL_DIR" >&2
  local tmp
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent "$DDB_LOCAL_PACKAGE" >/dev/null)
  tar -xzf "$tmp"/amplify-dynamodb-simulator-*.tgz -C "$tmp" package/emulator
  mkdir -p "$(dirname "$DDB_LOCAL_DIR")"
  rm -rf "$DDB_LOCAL_DIR"
  mv "$tmp/package/emulator" "$DDB_LOCAL_DIR"
  rm -rf "$tmp"
}

# A free TCP port on loopback.
ddb_free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# Answers 0 when a DynamoDB endpoint on 127.0.0.1:$1 answers ListTables.
ddb_answers() {
  curl -s -m 2 -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$1/" \
    -H 'Content-Type: application/x-amz-json-1.0' \
    -H 'X-Amz-Target: DynamoDB_20120810.ListTables' \
    -H "Authorization: AWS4-HMAC-SHA256 Credential=local/20240101/$AWS_REGION/dynamodb/aws4_request, SignedHeaders=host, Signature=0" \
    -d '{}' 2>/dev/null | grep -q '^200$'
}

# ddb_start PORT [DB_PATH]: starts DynamoDB Local on 127.0.0.1:PORT (in memory, or on disk under
# DB_PATH), waits until it answers, and sets DDB_PID.
ddb_start() {
  local port=$1 db_path=${2:-}
  local storage=(-inMemory)
  if [ -n "$db_path" ]; then
    mkdir -p "$db_path"
    storage=(-dbPath "$db_path")
  fi
  # Run from the install folder: DynamoDB Local writes a metadata file into its working directory.
  (cd "$DDB_LOCAL_DIR" && exec java -Djava.library.path=DynamoDBLocal_lib -jar DynamoDBLocal.jar \
    "${storage[@]}" -sharedDb -disableTelemetry -port "$port") >"${DDB_LOG:-/dev/null}" 2>&1 &
  DDB_PID=$!
  local deadline=$((SECONDS + 60))
  until ddb_answers "$port"; do
    if ! kill -0 "$DDB_PID" 2>/dev/null; then
      echo "DynamoDB Local exited during start-up (port $port)" >&2
      return 1
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "DynamoDB Local did not answer on port $port within 60 s" >&2
      return 1
    fi
    sleep 0.2
  done
}

ddb_stop() {
  if [ -n "${DDB_PID:-}" ] && kill -0 "$DDB_PID" 2>/dev/null; then
    kill "$DDB_PID" 2>/dev/null || true
    wait "$DDB_PID" 2>/dev/null || true
  fi
}
