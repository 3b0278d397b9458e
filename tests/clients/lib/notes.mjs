// What the subscription scripts share: failing with a tag, waiting, and writing the
// subscriptions test's `Notes` table (owner S, at N) behind dynarelay's back with the AWS SDK.
import {
  DeleteItemCommand,
  DynamoDBClient,
  PutItemCommand,
} from "@aws-sdk/client-dynamodb";

/** Prints `tag: detail` on stderr and exits with status 1. */
export function fail(tag, detail) {
  console.error(`${tag}: ${detail}`);
  process.exit(1);
}

/** Resolves after `ms` milliseconds. */
export const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

/** Puts (an open note with `text`) and removes notes of `owner` at `at` in `table`. */
export function notesOf(endpoint, table, owner) {
  // DynamoDB Local: dummy credentials, given, so that no credential source is ever looked for.
  const dynamodb = new DynamoDBClient({
    endpoint,
    region: "us-east-1",
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
  });
  const key = (at) => ({ owner: { S: owner }, at: { N: String(at) } });
  return {
    put: (at, text) =>
      dynamodb.send(
        new PutItemCommand({
          TableName: table,
          Item: { ...key(at), text: { S: text }, state: { S: "OPEN" } },
        }),
      ),
    remove: (at) => dynamodb.send(new DeleteItemCommand({ TableName: table, Key: key(at) })),
  };
}
