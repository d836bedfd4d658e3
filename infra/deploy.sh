#!/usr/bin/env bash
# Deploy Metro to AWS: storage from infra/resources.json (CloudFormation), then the Chalice app.
set -euo pipefail
cd "$(dirname "$0")/.."
STAGE=${STAGE:-prod}
STACK=${STACK:-metro-storage}
aws cloudformation deploy --stack-name "$STACK" --template-file infra/resources.json
ARN=$(aws cloudformation describe-stacks --stack-name "$STACK" \
  --query "Stacks[0].Outputs[?OutputKey=='MessagesStreamArn'].OutputValue" --output text)
METRO_MESSAGES_STREAM_ARN="$ARN" .venv/bin/chalice deploy --stage "$STAGE"
# Chalice cannot set FunctionResponseTypes; the fan-out mapping needs partial batch failure reports.
UUID=$(aws lambda list-event-source-mappings --function-name "metro-$STAGE-fanout" \
  --query "EventSourceMappings[0].UUID" --output text)
aws lambda update-event-source-mapping --uuid "$UUID" --function-response-types ReportBatchItemFailures \
  --bisect-batch-on-function-error --maximum-retry-attempts 10000
# Push subscriptions' queue mappings are made by Metro (chalicelib/store/mappings.py) with partial batch failure
# reports; repair any mapping of the push function without them (made by hand or by an older version).
for UUID in $(aws lambda list-event-source-mappings --function-name "metro-$STAGE-push" --output text \
  --query "EventSourceMappings[?!contains(FunctionResponseTypes || \`[]\`, 'ReportBatchItemFailures')].UUID"); do
  aws lambda update-event-source-mapping --uuid "$UUID" --function-response-types ReportBatchItemFailures
done
